package anthropic

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/dageval/dageval/harness/provider"
)

// marshalParam is an SDK param that encodes itself.
type marshalParam interface {
	param.ParamStruct
	MarshalJSON() ([]byte, error)
}

// preEncode encodes p once and returns a param that the SDK sends as those
// bytes (see provider.Encoded), with their size; when the SDK would not
// send them unchanged it returns p itself and 0.
func preEncode[T marshalParam, PT param.InferPtr[T]](p T) (T, int) {
	raw, err := p.MarshalJSON()
	if err != nil {
		return p, 0
	}
	o := param.Override[T, PT](json.RawMessage(raw))
	if again, err := o.MarshalJSON(); err != nil || !bytes.Equal(raw, again) {
		return p, 0
	}
	return o, len(raw)
}

// escapeHTML is whether anthropic-sdk-go's encoder escapes <, > and & (it
// does).
const escapeHTML = true

// holeFor puts a hole in place of the list in a request shell when its
// elements have encodings to splice, adding those to lists; false when
// they have none, and the shell then holds the list itself.
func holeFor[S ~[]T, T interface {
	provider.Element
	param.ParamStruct
}, PtrT param.InferPtr[T]](list *S, lists *[][][]byte) bool {
	elems, ok := provider.ListJSON([]T(*list), escapeHTML)
	if !ok {
		return false
	}
	*list = S{param.Override[T, PtrT](provider.Hole(len(*lists)))}
	*lists = append(*lists, elems)
	return true
}

// shellKey is what a request's shell (see provider.Shells) is built from
// besides its model's config: its settings, and which of its lists are
// spliced (bit k for list k).
type shellKey struct {
	settings provider.Settings
	spliced  uint8
}

// spliced returns p set to send the JSON it encodes to, built from its
// system blocks, turns and tools as they were pre-encoded (see
// provider.Splice) instead of by the SDK's encoder on every call, into
// the shell of the model's latest request when settings (those of the
// request, false when they cannot key a shell) are its settings; p itself
// when they cannot be spliced. The parameters keep every field, for the
// SDK reads some (the timeout follows max_tokens).
func (m *Model) spliced(p sdk.MessageNewParams, settings provider.Settings, keyed bool) sdk.MessageNewParams {
	shell := p
	var lists [][][]byte
	key := shellKey{settings: settings}
	if holeFor(&shell.System, &lists) {
		key.spliced |= 1
	} else if len(p.System) > 0 {
		keyed = false // the shell holds the system prompt
	}
	if holeFor(&shell.Messages, &lists) {
		key.spliced |= 2
	} else if len(p.Messages) > 0 {
		keyed = false
	}
	if holeFor(&shell.Tools, &lists) {
		key.spliced |= 4
	} else if len(p.Tools) > 0 {
		keyed = false
	}
	if len(lists) == 0 {
		return p
	}
	var s *provider.Shell
	var ok bool
	if keyed {
		s, ok = m.shells.Get(key, len(lists), escapeHTML, shell.MarshalJSON)
	} else if raw, err := shell.MarshalJSON(); err == nil {
		s, ok = provider.NewShell(raw, len(lists), escapeHTML)
	}
	if ok {
		param.SetJSON(s.Splice(lists), &p)
	}
	return p
}

// direct returns what to hand the SDK for p, and the options that come
// with it, so that the SDK sends the body spliced (which p carries as its
// JSON) without encoding or compacting it again: p with an empty object as
// its JSON, whose fields the SDK still reads (the timeout follows
// max_tokens), and options that set the body and then the config's extra
// body fields, which the client's own options set on the empty object and
// which are set again here the same way in the same order. The SDK's
// "stream" comes after every call option, as it does on the body it
// encodes. A platform's client options may set body fields of their own
// (anthropic_version), so a platform's request, or one not spliced, is
// sent as it is.
func (m *Model) direct(p sdk.MessageNewParams) (sdk.MessageNewParams, []option.RequestOption) {
	v, ok := p.Overrides()
	body, isRaw := v.(json.RawMessage)
	if !ok || !isRaw || m.platform != nil || !provider.PlainKeys(m.cfg.ExtraBody) {
		return p, nil
	}
	param.SetJSON([]byte("{}"), &p)
	// A fresh copy per attempt: the SDK's buffer is its own to change.
	opts := []option.RequestOption{option.WithRequestBody("application/json", bytes.Clone(body))}
	for _, k := range slices.Sorted(maps.Keys(m.cfg.ExtraBody)) {
		opts = append(opts, option.WithJSONSet(k, m.cfg.ExtraBody[k]))
	}
	return p, opts
}
