package stacktest

import (
	"net/http"
	"slices"
	"strings"
	"sync"
)

// WriteLog records one client's API writes (every request but GET) as
// "METHOD path", in the order their answers arrive, and can stop the loop
// using the client right after its nth write: a crash between two steps.
// A write is logged when its answer reaches the client, which may be after
// a test has seen its effect through another client: wait for the count
// before comparing.
type WriteLog struct {
	mu      sync.Mutex
	log     []string
	crashAt int
	crash   func()
}

// NewWriteLog returns a log that calls crash right after write crashAt
// (crashAt 0: never).
func NewWriteLog(crashAt int, crash func()) *WriteLog {
	return &WriteLog{crashAt: crashAt, crash: crash}
}

// Wrap is for rest.Config.Wrap.
func (w *WriteLog) Wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(r)
		if r.Method == http.MethodGet || err != nil || resp.StatusCode >= 300 {
			return resp, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.log = append(w.log, r.Method+" "+r.URL.Path)
		if len(w.log) == w.crashAt && w.crash != nil {
			w.crash()
		}
		return resp, err
	})
}

// All lists every write so far.
func (w *WriteLog) All() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// About lists the writes whose path names one of the objects.
func (w *WriteLog) About(names ...string) []string {
	var out []string
	for _, l := range w.All() {
		if slices.ContainsFunc(names, func(n string) bool {
			return strings.Contains(l, "/"+n+"/") || strings.HasSuffix(l, "/"+n)
		}) {
			out = append(out, l)
		}
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
