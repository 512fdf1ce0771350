package handlers

import (
	"errors"
	"net/http"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/templates/docs"

	"github.com/labstack/echo/v4"
)

// ConsolePath is where the web console is served.
const ConsolePath = "/"

// Console serves the web console at / to a browser signed in with the session cookie; any
// other caller is sent to the sign-in page, which comes back here. The page is not an
// operation of the API: it is the API's first client, and everything it shows it reads from
// the public API with the session cookie and its CSRF token.
func (h *Handlers) Console(authn *auth.Authenticator) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		p, err := authn.Authenticate(r)
		if ae := (*apierr.Error)(nil); err != nil && (!errors.As(err, &ae) || ae.Status != http.StatusUnauthorized) {
			return err
		}
		if err != nil || p == nil || p.Method != auth.MethodSession {
			if _, cerr := r.Cookie(auth.SessionCookie); cerr == nil && err != nil {
				// A cookie that is no longer a session: the browser drops it.
				c.Response().Header().Add("Set-Cookie", auth.SessionCookieHeader("", 0, h.SecureCookies()))
			}
			return auth.SignInRedirect(ConsolePath, nil)
		}
		return docs.RenderConsole(c.Response())
	}
}
