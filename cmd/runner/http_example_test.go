package main

import (
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// docs/kinds/http.md's example runs as the page says: a JSON API that
// curl (here net/http) reaches, with the statuses the page shows.
func TestHTTPExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/kinds/http.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"http.users.lua", "http.example.yaml"} {
		src, err := os.ReadFile("../../docs/kinds/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), string(src)) {
			t.Errorf("docs/kinds/http.md does not show %s as it is", f)
		}
	}
	addr := freeAddr(t) // below the ephemeral range: no :0 listen takes it meanwhile
	r := startEnv(t, []string{"HTTP_LISTEN=" + addr}, "run", "--no-watch", "--log-format", "json", "docs/kinds/http.example.yaml")
	base := "http://" + addr
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	// The listener answers "no route" (a 404 too) until the routes are
	// attached: wait for the handler's own answer.
	r.waitFor(t, "the example serves", func() bool {
		s, body := do("GET", "/users/7", "")
		return s == 404 && strings.Contains(body, "no user 7")
	})
	for _, c := range []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/users/7", "", 404, `{"error":{"kind":"not_found","message":"no user 7"}}`},
		{"PUT", "/users/7", `{"name":"Ann"}`, 201, `{"id":"7","name":"Ann"}`},
		{"GET", "/users/7", "", 200, `{"id":"7","name":"Ann"}`},
		{"PUT", "/users/8", `[1]`, 400, `{"error":{"kind":"invalid","message":"want a JSON object with a name"}}`},
		{"DELETE", "/users/7", "", 405, `"kind":"invalid"`},
		{"GET", "/nothing", "", 404, `{"error":{"kind":"not_found","message":"no route for /nothing"}}`},
	} {
		if s, b := do(c.method, c.path, c.body); s != c.status || !strings.Contains(b, c.want) {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, s, b, c.status, c.want)
		}
	}
	r.cmd.Process.Signal(os.Interrupt)
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d\n%s", code, r.logs())
	}
}

// The demo's JSON API answers the curl lines of the README.
func TestDemoHTTPAPI(t *testing.T) {
	addr := freeAddr(t) // below the ephemeral range: no :0 listen takes it meanwhile
	r := startEnv(t, []string{"DEMO_HTTP=" + addr}, "run", "--no-watch", "--log-format", "json", "config.example.yaml")
	body := func(method, path string) string {
		req, _ := http.NewRequest(method, "http://"+addr+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.TrimSpace(string(b))
	}
	r.waitFor(t, "the demo API", func() bool { return body("GET", "/api/hello/you") == `{"hello":"you"}` })
	before := body("GET", "/api/count")
	after := body("POST", "/api/count")
	if !strings.HasPrefix(before, `{"count":`) || !strings.HasPrefix(after, `{"count":`) || before == after {
		t.Errorf("count: %s then %s", before, after)
	}
	readme, _ := os.ReadFile("../../README.md")
	if !strings.Contains(string(readme), "curl localhost:8090/api/hello/you") {
		t.Errorf("README lacks the curl line")
	}
	r.cmd.Process.Signal(os.Interrupt)
	if code := r.wait(t); code != 0 {
		t.Errorf("exit %d\n%s", code, r.logs())
	}
}
