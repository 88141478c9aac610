package observe

import (
	"embed"
	"io/fs"
	"net/http"
)

// The live view's page: plain HTML, CSS and JavaScript embedded in the
// binary. It loads nothing from the network but its own files and the
// stream; the Content-Security-Policy says so to the browser too.

//go:embed ui/index.html ui/app.js ui/style.css
var uiFiles embed.FS

const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// uiAssets serves the page (GET /ui) and its files (GET /ui/app.js, …).
func uiAssets() (page, files http.Handler) {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	fileServer := http.StripPrefix("/ui/", http.FileServerFS(sub))
	secure := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Security-Policy", uiCSP)
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Referrer-Policy", "no-referrer")
			w.Header().Set("Cache-Control", "no-cache")
			h.ServeHTTP(w, r)
		})
	}
	page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, sub, "index.html")
	})
	return secure(page), secure(fileServer)
}
