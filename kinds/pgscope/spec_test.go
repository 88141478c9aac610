package pgscope

import (
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/proctor-run/proctor/registry"
)

func decode(t *testing.T, src string) (*Spec, []error) {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		t.Fatal(err)
	}
	node := doc.Content[0]
	var errs []error
	d := registry.NewDecoder(&registry.Entry{ID: "app:pg"}, "pg.yaml", node, &errs, nil)
	spec := Kind{}.Decode(d).(*Spec)
	d.Finish()
	return spec, errs
}

func TestDecodeDefaults(t *testing.T) {
	spec, errs := decode(t, "{}")
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := Spec{
		ProtocolTimeout: 5 * time.Second, BroadcastTimeout: 5 * time.Second,
		AntiEntropyInterval: 30 * time.Second, CircuitBreakerFailures: 3,
		CircuitBreakerResetTime: 10 * time.Second, MaxRetries: 3,
		RetryBaseDelay: 100 * time.Millisecond, RetryMaxDelay: time.Second,
		ActionQueueSize: 256, ActionQueueMaxSize: 1024, MonitorBuffer: 64,
	}
	if *spec != want || DefaultSpec() != want {
		t.Fatalf("defaults = %+v", *spec)
	}
}

func TestDecodeEveryField(t *testing.T) {
	spec, errs := decode(t, `
protocol_timeout: 1s
broadcast_timeout: 2s
anti_entropy_interval: 0
circuit_breaker_failures: 5
circuit_breaker_reset_time: 3s
max_retries: 0
retry_base_delay: 10ms
retry_max_delay: 20ms
action_queue_size: 10
action_queue_max_size: 20
monitor_buffer: 7
max_groups: 100
max_members_per_group: 10000
`)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := Spec{
		ProtocolTimeout: time.Second, BroadcastTimeout: 2 * time.Second,
		AntiEntropyInterval: 0, CircuitBreakerFailures: 5,
		CircuitBreakerResetTime: 3 * time.Second, MaxRetries: 0,
		RetryBaseDelay: 10 * time.Millisecond, RetryMaxDelay: 20 * time.Millisecond,
		ActionQueueSize: 10, ActionQueueMaxSize: 20, MonitorBuffer: 7,
		MaxGroups: 100, MaxMembersPerGroup: 10000,
	}
	if *spec != want {
		t.Fatalf("spec = %+v", *spec)
	}
}

func TestDecodeInvalid(t *testing.T) {
	cases := []struct {
		src, field, msg string
	}{
		{"protocol_timeout: 0s", "protocol_timeout", "positive duration"},
		{"broadcast_timeout: -1s", "broadcast_timeout", "positive duration"},
		{"broadcast_timeout: soon", "broadcast_timeout", "must be a duration"},
		{"anti_entropy_interval: -5s", "anti_entropy_interval", "0 (disabled)"},
		{"circuit_breaker_failures: 0", "circuit_breaker_failures", "at least 1"},
		{"circuit_breaker_reset_time: 0", "circuit_breaker_reset_time", "positive duration"},
		{"max_retries: -1", "max_retries", "0 (no retries)"},
		{"retry_base_delay: 0", "retry_base_delay", "positive duration"},
		{"retry_base_delay: 2s\nretry_max_delay: 1s", "retry_max_delay", "must not be below retry_base_delay"},
		{"action_queue_size: 0", "action_queue_size", "at least 1"},
		{"action_queue_max_size: 0", "action_queue_max_size", "at least 1"},
		{"action_queue_size: 50\naction_queue_max_size: 10", "action_queue_size", "must not exceed action_queue_max_size"},
		{"monitor_buffer: 0", "monitor_buffer", "at least 1"},
		{"max_groups: -1", "max_groups", "0 (unlimited)"},
		{"max_members_per_group: -3", "max_members_per_group", "0 (unlimited)"},
		{"max_groups: lots", "max_groups", "must be an integer"},
		{"monitor_bufer: 3", "monitor_bufer", `did you mean "monitor_buffer"`},
	}
	for _, c := range cases {
		t.Run(c.field, func(t *testing.T) {
			_, errs := decode(t, c.src)
			if len(errs) != 1 {
				t.Fatalf("errors = %v, want exactly one", errs)
			}
			got := errs[0].Error()
			if !strings.Contains(got, "pg.yaml:") || !strings.Contains(got, "app:pg: "+c.field+": ") || !strings.Contains(got, c.msg) {
				t.Fatalf("error = %q, want FILE:LINE:COL: app:pg: %s: …%s…", got, c.field, c.msg)
			}
		})
	}
	// Every problem is reported in one pass.
	_, errs := decode(t, "protocol_timeout: 0s\nmonitor_buffer: 0\nmax_groups: -1")
	if len(errs) != 3 {
		t.Fatalf("errors = %v, want 3", errs)
	}
}
