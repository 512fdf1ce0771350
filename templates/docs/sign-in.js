// The sign-in page (sign-in.html.tmpl): signs in with POST /api/v1/auth/session (the session
// cookie is set by the answer), asks for the two-factor code when the account needs one, then
// opens the page it came from (data-next), which must be a path of this origin.
"use strict";
(function () {
  var form = document.getElementById("sign-in");
  var errorBox = document.getElementById("error");
  var codeStep = document.getElementById("code-step");
  var code = document.getElementById("code");
  var submit = document.getElementById("submit");
  var signedIn = document.getElementById("signed-in");
  var csrf = "";

  // safeNext is next when it stays on this origin (the server checked it too), else "".
  function safeNext(next) {
    if (!next || next.charAt(0) !== "/" || next.charAt(1) === "/" || next.indexOf("\\") >= 0) {
      return "";
    }
    try {
      var u = new URL(next, window.location.origin);
      return u.origin === window.location.origin ? u.pathname + u.search + u.hash : "";
    } catch (e) {
      return "";
    }
  }

  function showError(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  // problem reads both error shapes of the API: flat {code, message} and nested {error: {...}}.
  function problem(body, status) {
    var e = body && typeof body.error === "object" && body.error ? body.error : body || {};
    var message = e.message || "Signing in failed (HTTP " + status + ").";
    if (Array.isArray(e.details) && e.details.length) {
      message = e.details.map(function (d) { return d.message; }).join(" ");
    }
    return { code: e.code || "", message: message };
  }

  function showSignedIn(session) {
    csrf = session.csrf_token;
    document.getElementById("who").textContent = session.user.email;
    form.hidden = true;
    signedIn.hidden = false;
  }

  function call(method, body) {
    var headers = { "Accept": "application/json" };
    if (body) {
      headers["Content-Type"] = "application/json";
    }
    if (csrf) {
      headers["X-CSRF-Token"] = csrf;
    }
    return fetch("/api/v1/auth/session", {
      method: method, headers: headers, credentials: "same-origin",
      body: body ? JSON.stringify(body) : undefined
    }).then(function (res) {
      return res.text().then(function (text) {
        var data = null;
        try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
        return { status: res.status, ok: res.ok, data: data };
      });
    });
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    showError("");
    var body = { email: document.getElementById("email").value.trim(), password: document.getElementById("password").value };
    if (!codeStep.hidden && code.value.trim()) {
      body.two_factor_code = code.value.trim();
    }
    submit.disabled = true;
    call("POST", body).then(function (r) {
      submit.disabled = false;
      if (r.ok) {
        var next = safeNext(form.dataset.next);
        if (next) {
          window.location.assign(next);
        } else {
          showSignedIn(r.data);
        }
        return;
      }
      var p = problem(r.data, r.status);
      if (p.code === "TWO_FACTOR_CODE_REQUIRED") {
        codeStep.hidden = false;
        code.required = true;
        code.focus();
        showError("Enter the code of your authenticator app (or a recovery code) to finish signing in.");
        return;
      }
      if (p.code === "INVALID_TWO_FACTOR_CODE") {
        code.value = "";
        code.focus();
      }
      showError(p.message);
    }, function () {
      submit.disabled = false;
      showError("The service could not be reached; check the connection and try again.");
    });
  });

  document.getElementById("sign-out").addEventListener("click", function () {
    call("DELETE").then(function (r) {
      if (r.ok || r.status === 401) {
        csrf = "";
        signedIn.hidden = true;
        form.hidden = false;
        return;
      }
      window.alert(problem(r.data, r.status).message);
    });
  });

  // Already signed in (and not sent here by a page that wants a sign-in): say so.
  if (!safeNext(form.dataset.next)) {
    call("GET").then(function (r) {
      if (r.ok) {
        showSignedIn(r.data);
      }
    });
  }
})();
