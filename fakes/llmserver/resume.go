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
// requests' conversations stood after their last message, so that a
// request whose messages start with all of those, byte for byte, resumes
// the conversion there. The kept states are shared and must be copied
// before they are changed.
type resumes[S any] struct {
	mu    sync.Mutex
	kept  []*resumePoint[S] // most recent first
	bytes int
}

type resumePoint[S any] struct {
	elems [][]byte // copies of the messages converted
	size  int
	state S
}

// Bounds of what a resumes keeps: a few conversations served at once (an
// eval's concurrent cases), and their bytes.
const (
	maxResumes     = 8
	maxResumeBytes = 16 << 20
)

// find returns the state after the longest kept run of elements that
// elems starts with, and how many elements it covers; false when none.
func (r *resumes[S]) find(elems []json.RawMessage) (int, S, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *resumePoint[S]
	for _, p := range r.kept {
		if len(p.elems) > len(elems) || best != nil && len(p.elems) <= len(best.elems) {
			continue
		}
		same := true
		for i, e := range p.elems {
			if !bytes.Equal(e, elems[i]) {
				same = false
				break
			}
		}
		if same {
			best = p
		}
	}
	if best == nil {
		var zero S
		return 0, zero, false
	}
	return len(best.elems), best.state, true
}

// keep records state as where the conversion of elems stands, replacing
// a kept point of the same conversation (one elems starts with).
func (r *resumes[S]) keep(elems []json.RawMessage, state S) {
	p := &resumePoint[S]{elems: make([][]byte, len(elems)), state: state}
	for _, e := range elems {
		p.size += len(e)
	}
	if p.size > maxResumeBytes/4 {
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
		if q.prefixOf(p) || len(kept) >= maxResumes || total+q.size > maxResumeBytes {
			continue
		}
		kept = append(kept, q)
		total += q.size
	}
	r.kept, r.bytes = kept, total
}

func (q *resumePoint[S]) prefixOf(p *resumePoint[S]) bool {
	if len(q.elems) > len(p.elems) {
		return false
	}
	for i, e := range q.elems {
		if !bytes.Equal(e, p.elems[i]) {
			return false
		}
	}
	return true
}
