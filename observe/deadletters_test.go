package observe

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/proctor-run/proctor/internal/testutil"
	"github.com/proctor-run/proctor/process"
)

// series gathers the series of the metric name from reg, by their labels
// written k=v,k=v.
func series(t *testing.T, reg *prometheus.Registry, name string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			out[strings.Join(ls, ",")] = v
		}
	}
	return out
}

func letter(reason process.DeadLetterReason, to string) process.DeadLetter {
	return process.DeadLetter{Time: time.Now(), From: process.PID{Node: "n", ID: 1, Creation: 1}, To: to, Topic: "t", Reason: reason}
}

func TestDeadLettersRingAndCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	d := NewDeadLetters(DeadLetterOptions{Keep: 3, Metrics: reg, Logger: slog.New(slog.DiscardHandler)})
	defer d.Close()
	// Every reason's series exists at zero before the first dead letter.
	if n := len(series(t, reg, "dead_letters_total")); n != len(deadLetterReasons) {
		t.Fatalf("%d series at start, want %d", n, len(deadLetterReasons))
	}
	if got := d.Recent(); len(got) != 0 {
		t.Fatalf("recent %+v", got)
	}
	for i, to := range []string{"a", "b", "c", "d", "e"} {
		r := process.DeadNoProcess
		if i == 4 {
			r = process.DeadMailboxFull
		}
		d.DeadLetter(letter(r, to))
	}
	got := d.Recent()
	if len(got) != 3 || got[0].To != "c" || got[1].To != "d" || got[2].To != "e" || got[2].Reason != "mailbox_full" || got[0].From != "<n.1.1>" {
		t.Fatalf("recent %+v", got)
	}
	c := d.Counts()
	if c["no_process"] != 4 || c["mailbox_full"] != 1 || c["late_reply"] != 0 || len(c) != len(deadLetterReasons) {
		t.Fatalf("counts %v", c)
	}
	if v := series(t, reg, "dead_letters_total")["reason=no_process"]; v != 4 {
		t.Fatalf("dead_letters_total{no_process} = %v", v)
	}

	none := NewDeadLetters(DeadLetterOptions{Keep: -1, Logger: slog.New(slog.DiscardHandler)})
	defer none.Close()
	none.DeadLetter(letter(process.DeadLateReply, "x"))
	if len(none.Recent()) != 0 || none.Counts()["late_reply"] != 1 || none.Keep() != 0 {
		t.Fatalf("keep none: %+v %v", none.Recent(), none.Counts())
	}
	if def := NewDeadLetters(DeadLetterOptions{}); def.Keep() != DefaultDeadLetterKeep {
		t.Fatalf("default keep %d", def.Keep())
	} else {
		def.Close()
	}
}

// logLines parses JSON log lines with their message and reason.
func logLines(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// One line per reason per interval, not one per message: the first of a
// quiet reason at once, the rest summed at the end of the interval.
func TestDeadLettersLogOneLinePerReasonPerInterval(t *testing.T) {
	var buf testutil.SyncBuffer
	d := NewDeadLetters(DeadLetterOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), LogEvery: time.Hour})
	for i := 0; i < 100; i++ {
		d.DeadLetter(letter(process.DeadNoProcess, "gone"))
	}
	for i := 0; i < 3; i++ {
		d.DeadLetter(letter(process.DeadNameNotFound, "nobody"))
	}
	if n := len(logLines(t, buf.String())); n != 2 {
		t.Fatalf("%d lines before the interval ended, want the first of each reason:\n%s", n, buf.String())
	}
	d.Close() // ends the interval
	lines := logLines(t, buf.String())
	if len(lines) != 4 {
		t.Fatalf("%d lines, want 4:\n%s", len(lines), buf.String())
	}
	sums := map[string]float64{}
	for _, l := range lines[2:] {
		sums[l["reason"].(string)] = l["count"].(float64)
	}
	if sums["no_process"] != 99 || sums["name_not_found"] != 2 {
		t.Fatalf("summed counts %v", sums)
	}

	// After a quiet interval the next one is logged at once again; within
	// a busy one it waits.
	buf = testutil.SyncBuffer{}
	d2 := NewDeadLetters(DeadLetterOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), LogEvery: time.Hour})
	defer d2.Close()
	d2.DeadLetter(letter(process.DeadLateReply, "a"))
	d2.DeadLetter(letter(process.DeadLateReply, "a"))
	d2.flush() // interval 1 ends: one summed
	d2.DeadLetter(letter(process.DeadLateReply, "a"))
	if n := len(logLines(t, buf.String())); n != 2 {
		t.Fatalf("busy interval: %d lines:\n%s", n, buf.String())
	}
	d2.flush() // interval 2 ends: one summed
	d2.flush() // interval 3: quiet
	d2.DeadLetter(letter(process.DeadLateReply, "a"))
	if n := len(logLines(t, buf.String())); n != 4 {
		t.Fatalf("after a quiet interval: %d lines:\n%s", n, buf.String())
	}
}

// The sink's goroutine flushes on its own, every interval.
func TestDeadLettersFlushOnTick(t *testing.T) {
	var buf testutil.SyncBuffer
	d := NewDeadLetters(DeadLetterOptions{Logger: slog.New(slog.NewJSONHandler(&buf, nil)), LogEvery: 20 * time.Millisecond})
	defer d.Close()
	d.DeadLetter(letter(process.DeadUnreachable, "x@y"))
	d.DeadLetter(letter(process.DeadUnreachable, "x@y"))
	testutil.Eventually(t, "the summed line", func() bool { return strings.Contains(buf.String(), `"count":1`) })
}

// What the ring keeps and the log writes of a dead letter's strings is cut,
// with a marker, however long the sender's were (the ring of 256 held whole
// 64 MiB topics: gigabytes, and /v1/dead-letters served them).
func TestDeadLettersBoundTheirStrings(t *testing.T) {
	var logs strings.Builder
	d := NewDeadLetters(DeadLetterOptions{Keep: 4, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	l := letter(process.DeadNoProcess, strings.Repeat("n", 1<<20))
	l.Topic = strings.Repeat("t", 8<<20)
	d.DeadLetter(l)
	d.DeadLetter(l) // summed into the interval's line at Close
	d.Close()
	got := d.Recent()
	if len(got) != 2 {
		t.Fatalf("%d kept", len(got))
	}
	for _, g := range got {
		if len(g.To) > process.MaxNameSize || len(g.Topic) > process.MaxTopicSize ||
			!strings.HasSuffix(g.Topic, " bytes cut)") || !strings.HasSuffix(g.To, " bytes cut)") {
			t.Fatalf("kept to %d bytes, topic %d bytes", len(g.To), len(g.Topic))
		}
	}
	if logs.Len() > 8<<10 {
		t.Fatalf("the log holds %d bytes", logs.Len())
	}
}
