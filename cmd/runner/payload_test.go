package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestSendPayloadFromStdinOrFile: `-` reads the payload from standard
// input and `@FILE` from a file, so a payload past the kernel's argument
// limit (900 KB: "Argument list too long") can be sent; what is read is
// bounded by the node's 1 MiB.
func TestSendPayloadFromStdinOrFile(t *testing.T) {
	var mu sync.Mutex
	var got []json.RawMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, body.Payload)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/ask") {
			io.WriteString(w, `{"reply": {"len": `+itoaLen(body.Payload)+`}}`)
			return
		}
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()

	big := `{"blob":"` + strings.Repeat("x", 900<<10) + `"}`
	dir := t.TempDir()
	file := filepath.Join(dir, "big.json")
	os.WriteFile(file, []byte(big), 0o644)
	huge := filepath.Join(dir, "huge.json")
	os.WriteFile(huge, []byte(`"`+strings.Repeat("x", 1<<20)+`"`), 0o644)
	// Within 1 MiB as a payload, past it with the request around it.
	edge := filepath.Join(dir, "edge.json")
	os.WriteFile(edge, []byte(`"`+strings.Repeat("x", 1<<20-8)+`"`), 0o644)
	notJSON := filepath.Join(dir, "bad.json")
	os.WriteFile(notJSON, []byte("{not json"), 0o644)

	withStdin := func(in string, args ...string) (int, string, string) {
		old := stdin
		stdin = strings.NewReader(in)
		defer func() { stdin = old }()
		return runCLI(args...)
	}
	tests := []struct {
		name  string
		in    string
		args  []string
		code  int
		want  string // in stderr, or the payload received
		reply string
	}{
		{"stdin", big + "\n", []string{"send", srv.URL, "app:store", "put", "-"}, 0, big, ""},
		{"file", "", []string{"send", srv.URL, "app:store", "put", "@" + file}, 0, big, ""},
		{"ask from stdin", `[1, 2]`, []string{"ask", srv.URL, "app:store", "len", "-"}, 0, `[1,2]`, `"len": 5`},
		{"literal", "", []string{"send", srv.URL, "app:store", "put", `{"a":1}`}, 0, `{"a":1}`, ""},
		{"too large", "", []string{"send", srv.URL, "app:store", "put", "@" + huge}, 2, "larger than 1048576 bytes (1 MiB)", ""},
		{"too large on stdin", `"` + strings.Repeat("x", 1<<20) + `"`, []string{"send", srv.URL, "app:store", "put", "-"}, 2, "payload from standard input: larger than", ""},
		{"request too large", "", []string{"send", srv.URL, "app:store", "put", "@" + edge}, 1, "larger than the 1048576 (1 MiB) the node takes", ""},
		{"missing file", "", []string{"send", srv.URL, "app:store", "put", "@" + filepath.Join(dir, "nope.json")}, 2, "no such file", ""},
		{"bare @", "", []string{"send", srv.URL, "app:store", "put", "@"}, 2, "want @FILE", ""},
		{"file not JSON", "", []string{"send", srv.URL, "app:store", "put", "@" + notJSON}, 2, `payload "{not json" is not JSON`, ""},
	}
	for _, tt := range tests {
		mu.Lock()
		got = nil
		mu.Unlock()
		code, out, errs := withStdin(tt.in, tt.args...)
		if code != tt.code {
			t.Errorf("%s: exit %d, want %d: %s", tt.name, code, tt.code, errs)
			continue
		}
		mu.Lock()
		g := got
		mu.Unlock()
		if tt.code != 0 {
			if !strings.Contains(errs, tt.want) || len(g) != 0 {
				t.Errorf("%s: stderr %q (sent %d), want %q and nothing sent", tt.name, errs, len(g), tt.want)
			}
			continue
		}
		if len(g) != 1 || string(g[0]) != tt.want {
			t.Errorf("%s: the node got %.60q, want %.60q", tt.name, g, tt.want)
		}
		if tt.reply != "" && !strings.Contains(out, tt.reply) {
			t.Errorf("%s: stdout %q, want %q", tt.name, out, tt.reply)
		}
	}
}

func itoaLen(b []byte) string { return strconv.Itoa(len(b)) }

// TestStopSignalEndsSendAndAsk: send and ask do not take stop signals for
// themselves, so SIGTERM and SIGINT end them while they wait — here on a
// node that takes the connection and never answers. A FIFO named as the
// payload (which blocked the open until a writer came) is refused at once:
// payload files are read as configuration files are (readfile.Regular).
func TestStopSignalEndsSendAndAsk(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "payload")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		r := start(t, "ask", "http://127.0.0.1:1", "app:x", "t", "@"+fifo)
		if code := r.wait(t); code != 2 || !strings.Contains(r.logs(), "not a regular file (a named pipe)") {
			t.Fatalf("a FIFO payload: exit %d, stderr %q", code, r.logs())
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // never accepted: the request waits for an answer
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		r := start(t, "ask", "http://"+ln.Addr().String(), "app:x", "t", "1")
		// Give it time to block in the request; a signal before that ends
		// it as well.
		time.Sleep(200 * time.Millisecond)
		r.cmd.Process.Signal(sig)
		r.wait(t)
		if ws, ok := r.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != sig {
			t.Fatalf("%v: ended with %v, want killed by the signal", sig, r.cmd.ProcessState)
		}
	}
}
