// Package docs serves the service's HTML pages: the interactive documentation pages of a
// description (Swagger UI and Redoc), the sign-in page, the dashboard page and the web
// console, from files embedded in the binary.
// The pages load nothing from other hosts; their Content-Security-Policy adds to the
// service's `default-src 'self'` only what they need: for the documentation pages a
// per-request nonce for the inline script and injected styles, data: images and fonts, and
// blob: workers (Redoc's search); the sign-in page has no inline script at all.
package docs

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"time"
)

// files are the page templates and the pages' own scripts and styles beside this file, and
// under thirdparty/ the minified bundles copied from npm packages by scripts/docs-assets.sh
// and scripts/console-assets.sh; under console/ the web console's page, modules and styles.
//
//go:embed *.html.tmpl *.js *.css thirdparty/*.js thirdparty/*.css thirdparty/*.LICENSE console/*.html.tmpl console/*.js console/*.css
var files embed.FS

var pages = template.Must(template.ParseFS(files, "*.html.tmpl", "console/*.html.tmpl"))

// Page kinds.
const (
	Swagger = "swagger.html.tmpl"
	Redoc   = "redoc.html.tmpl"
	SignIn  = "sign-in.html.tmpl"
	Board   = "dashboard.html.tmpl"
	Console = "console.html.tmpl"
)

// styleHashes allow the <style> elements a page's bundle injects without the nonce (Redoc
// 2.5.4's style-loader: an empty one and its scrollbar CSS), by their SHA-256: nothing else.
var styleHashes = map[string]string{
	Redoc: " 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' 'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='",
}

// AssetsPath is where the pages' front-end files are served.
const AssetsPath = "/api/v1/docs/assets"

// Render writes a documentation page of spec (the description, as a JSON-ready value) with
// its headers: the page's own CSP and no caching. HTML in descriptions shows as text (see
// withoutHTML). csrf, for a browser signed in with the session cookie, is the session's CSRF
// token: Swagger UI's requests send it, so that trying out a POST works with the cookie.
func Render(w http.ResponseWriter, kind, title string, spec any, csrf string) error {
	raw := make([]byte, 18)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	nonce := base64.RawStdEncoding.EncodeToString(raw)
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, kind, map[string]any{"Title": title, "Spec": withoutHTML(spec), "Nonce": nonce, "Assets": AssetsPath, "CSRF": csrf}); err != nil {
		return err
	}
	return write(w, buf.Bytes(), "default-src 'self'; script-src 'self' 'nonce-"+nonce+"'; style-src 'self' 'nonce-"+nonce+"'"+styleHashes[kind]+
		"; img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
}

// RenderSignIn writes the sign-in page, which goes to next (a path the caller checked) once
// signed in. Its script and styles are files of this service: no inline script, no nonce.
func RenderSignIn(w http.ResponseWriter, next string) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, SignIn, map[string]any{"Next": next, "Assets": AssetsPath}); err != nil {
		return err
	}
	return write(w, buf.Bytes(), "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
}

// RenderDashboard writes the page that draws a dashboard: its script (and Apache ECharts)
// are files of this service, and it reads the dashboard and its data from the API with the
// browser's credentials. No inline script, no nonce; charts are drawn on canvas.
func RenderDashboard(w http.ResponseWriter, id, title string) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, Board, map[string]any{"ID": id, "Title": title, "Assets": AssetsPath}); err != nil {
		return err
	}
	return write(w, buf.Bytes(), "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
}

// RenderConsole writes the web console: one page whose ES modules (and CodeMirror's and
// ECharts' bundles) are files of this service, calling the public API with the session
// cookie and its CSRF token. No inline script, no eval, no nonce.
func RenderConsole(w http.ResponseWriter) error {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, Console, map[string]any{"Assets": AssetsPath}); err != nil {
		return err
	}
	return write(w, buf.Bytes(), "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "+
		"frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
}

// write answers a page with its CSP, uncached.
func write(w http.ResponseWriter, page []byte, csp string) error {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", csp)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(page)
	return err
}

// assetPath is where a front-end file served by its bare name lives: the pages' own, the
// console's, or a third-party bundle's.
func assetPath(name string) string {
	for _, p := range []string{name, "console/" + name} {
		if _, err := fs.Stat(files, p); err == nil {
			return p
		}
	}
	return "thirdparty/" + name
}

// started is the files' modification time (the binary's start: they change with it).
var started = time.Now()

// Exists says whether name is a front-end file of the pages.
func Exists(name string) bool {
	if path.Ext(name) != ".js" && path.Ext(name) != ".css" {
		return false
	}
	if path.Base(name) != name {
		return false
	}
	_, err := fs.Stat(files, assetPath(name))
	return err == nil
}

// Asset serves a front-end file of the pages, or answers false when there is none.
func Asset(w http.ResponseWriter, r *http.Request, name string) bool {
	if !Exists(name) {
		return false
	}
	b, err := fs.ReadFile(files, assetPath(name))
	if err != nil {
		return false
	}
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeContent(w, r, name, started, bytes.NewReader(b))
	return true
}
