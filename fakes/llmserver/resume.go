package llmserver

import (
	"bytes"
	"encoding/json"
	"sync"
)

// A client resends the whole conversation on every call, so a server that
// converts every message of every request does work quadratic in the
// length of a run; with the pieces memoised (see memo), looking each one
// up and converting it again still made the local server most of a long
// HTTP run's CPU time. A resumes keeps where the conversion of the latest
// requests' conversations stood after some of their messages (after the
// last, and for a client that moves a cache marker to the latest message
// on every call, before it), so that a request whose messages start with
// those same messages, byte for byte, resumes the conversion there. The
// kept states are shared and must be copied before they are changed.
type resumes[S any] struct {
	mu   sync.Mutex
	kept []*resumePoint[S] // most recent first
}

// resumePoint is one request's messages and the states of its conversion
// after some of them, by ascending count.
type resumePoint[S any] struct {
	elems  [][]byte // copies of the request's messages
	size   int
	states []resumeState[S]
}

type resumeState[S any] struct {
	n     int // messages converted
	state S
}

// Bounds of what a resumes keeps: a few conversations served at once (an
// eval's concurrent cases), and their bytes.
const (
	maxResumes     = 8
	maxResumeBytes = 16 << 20
)

// common counts the messages a and b start with alike.
func common[E ~[]byte](a [][]byte, b []E) int {
	n := 0
	for n < len(a) && n < len(b) && bytes.Equal(a[n], b[n]) {
		n++
	}
	return n
}

// find returns the kept state that covers the most of the messages elems
// starts with, and how many messages it covers; false when none does.
func (r *resumes[S]) find(elems []json.RawMessage) (int, S, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *resumeState[S]
	for _, p := range r.kept {
		m := common(p.elems, elems)
		for k := len(p.states) - 1; k >= 0; k-- {
			if st := &p.states[k]; st.n <= m {
				if best == nil || st.n > best.n {
					best = st
				}
				break
			}
		}
	}
	if best == nil {
		var zero S
		return 0, zero, false
	}
	return best.n, best.state, true
}

// keep records states (by ascending count) of the conversion of elems,
// dropping the kept points of the same conversation up to their last
// message, which these supersede.
func (r *resumes[S]) keep(elems []json.RawMessage, states ...resumeState[S]) {
	p := &resumePoint[S]{elems: make([][]byte, len(elems)), states: states}
	for _, e := range elems {
		p.size += len(e)
	}
	if p.size > maxResumeBytes/4 || len(states) == 0 {
		return
	}
	buf := make([]byte, 0, p.size)
	for i, e := range elems {
		buf = append(buf, e...)
		p.elems[i] = buf[len(buf)-len(e):]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := []*resumePoint[S]{p}
	total := p.size
	for _, q := range r.kept {
		if common(q.elems, p.elems) >= len(q.elems)-1 || len(kept) >= maxResumes || total+q.size > maxResumeBytes {
			continue
		}
		kept = append(kept, q)
		total += q.size
	}
	r.kept = kept
}
