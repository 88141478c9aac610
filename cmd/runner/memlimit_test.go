package main

import (
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/proctor-run/proctor/process"
)

func TestParseMemoryLimit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"2GiB", 2 << 30, ""},
		{"512MiB", 512 << 20, ""},
		{"100000000", 100000000, ""},
		{"off", math.MaxInt64, ""},
		{"2GB", 0, "want a positive size"},
		{"-1", 0, "want a positive size"},
		{"lots", 0, "or off"},
		{"1KiB", 0, "below the smallest limit"},
		{"2048GiB", 0, "at most 1TiB"},
	} {
		var m memoryLimit
		err := m.Set(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %d, %v; want an error with %q", tc.in, m.bytes, err, tc.err)
			}
			continue
		}
		if err != nil || !m.set || m.bytes != tc.want {
			t.Errorf("%q: %+v, %v; want %d", tc.in, m, err, tc.want)
		}
	}
	f, err := parseRun([]string{"--memory-limit", "1GiB", "c.yaml"}, io.Discard)
	if err != nil || !f.memLimit.set || f.memLimit.bytes != 1<<30 {
		t.Fatalf("parseRun: %+v, %v", f, err)
	}
	if _, err := parseRun([]string{"--memory-limit", "big"}, io.Discard); err == nil || !strings.Contains(err.Error(), "memory-limit") {
		t.Fatalf("a bad size: %v", err)
	}
}

// TestMemoryLimitTakesEffect runs the runner as users do: the flag sets the
// Go runtime's limit, GOMEMLIMIT alone is reported, and the flag wins over
// it. The log line reports the limit the runtime has in force.
func TestMemoryLimitTakesEffect(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"flag", []string{"--memory-limit", "1GiB"}, "", `"msg":"memory limit","bytes":1073741824,"source":"--memory-limit"`},
		{"env", nil, "GOMEMLIMIT=512MiB", `"msg":"memory limit","bytes":536870912,"source":"GOMEMLIMIT"`},
		{"flag_over_env", []string{"--memory-limit", "256MiB"}, "GOMEMLIMIT=512MiB", `"msg":"memory limit","bytes":268435456,"source":"--memory-limit"`},
		{"off", []string{"--memory-limit", "off"}, "GOMEMLIMIT=512MiB", `"msg":"memory limit off","source":"--memory-limit"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--log-format", "json", "--no-watch", "--main", "app:hello", "config.example.yaml"}, tc.args...)
			cmd := exec.Command(binary(t), args...)
			cmd.Dir = "../.."
			cmd.Env = os.Environ()
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("runner: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("no %s in:\n%s", tc.want, out)
			}
		})
	}
}

// TestMaxProcessesFlag: --max-processes reaches the node's options; 0 is
// no limit, a negative number an error.
func TestMaxProcessesFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int // process.Options.MaxProcesses
	}{
		{nil, process.DefaultMaxProcesses},
		{[]string{"--max-processes", "1000"}, 1000},
		{[]string{"--max-processes", "0"}, -1},
	} {
		f, err := parseRun(append(tc.args, "c.yaml"), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if got := nodeMaxProcesses(f.maxProcs); got != tc.want {
			t.Errorf("%v: MaxProcesses %d, want %d", tc.args, got, tc.want)
		}
	}
	if _, err := parseRun([]string{"--max-processes", "-1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "max-processes") {
		t.Fatalf("a negative limit: %v", err)
	}
}
