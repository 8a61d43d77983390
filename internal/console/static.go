package console

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// assets are the console's pages: plain HTML, CSS and ES modules.
//
//go:embed assets
var assets embed.FS

// contentSecurityPolicy lets the pages load only their own files and
// talk only to their own origin: no inline script, no frame around them.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
}

func (c *Console) serveIndex(w http.ResponseWriter, r *http.Request) {
	c.serveFile(w, r, "assets/index.html")
}

func (c *Console) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := path.Clean("/" + strings.TrimPrefix(r.URL.Path, "/console/"))[1:]
	if !strings.HasPrefix(name, "assets/") {
		writeError(w, http.StatusNotFound, "NotFound", "no such file")
		return
	}
	c.serveFile(w, r, name)
}

// serveFile serves an embedded file; the pages are revalidated on every
// load (no-cache), so that a new Ferry's are never mixed with an old one's.
func (c *Console) serveFile(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(assets, name)
	if err != nil {
		writeError(w, http.StatusNotFound, "NotFound", "no such file")
		return
	}
	h := w.Header()
	securityHeaders(h)
	h.Set("Cache-Control", "no-cache")
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h.Set("Content-Type", ctype)
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}
