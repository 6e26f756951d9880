package openai

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

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

// escapeHTML is whether openai-go's encoder escapes <, > and & (it does
// not).
const escapeHTML = false

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

// shellKey is what a request's shell (see provider.SharedShells) is built
// from: what chatFields and responsesFields read of its model's config
// (the model's name, its kind and its default output limit), the
// request's settings, whether it streams, its system prompt where the
// shell holds it, and which of its lists are spliced (bit k for list k).
type shellKey struct {
	model     string
	kind      string
	maxTokens int
	settings  provider.Settings
	stream    bool
	system    string
	spliced   uint8
}

// shellKey returns the key of a request's shell with settings.
func (m *Model) shellKey(settings provider.Settings) shellKey {
	return shellKey{model: m.cfg.Model, kind: m.cfg.Kind, maxTokens: m.cfg.MaxTokens, settings: settings}
}

// splicedResponses returns p set to send the JSON it encodes to, built
// from its input items and tools as they were pre-encoded (see
// provider.Splice) instead of by the SDK's encoder on every call, into
// the shell of the model's latest request when settings (those of the
// request, false when they cannot key a shell) are its settings; p itself
// when they cannot be spliced. The parameters keep every field.
func (m *Model) splicedResponses(p responses.ResponseNewParams, settings provider.Settings, keyed bool) responses.ResponseNewParams {
	shell := p
	var lists [][][]byte
	key := m.shellKey(settings)
	key.system = p.Instructions.Value
	if holeFor(&shell.Input.OfInputItemList, &lists) {
		key.spliced |= 1
	} else if len(p.Input.OfInputItemList) > 0 || !param.IsOmitted(p.Input.OfString) {
		keyed = false // the shell holds the input
	}
	if holeFor(&shell.Tools, &lists) {
		key.spliced |= 2
	} else if len(p.Tools) > 0 {
		keyed = false
	}
	if body, ok := splice(&responseShells, key, keyed, shell, lists); ok {
		param.SetJSON(body, &p)
	}
	return p
}

// splicedChat is splicedResponses for Chat Completions: messages and
// tools; stream says whether the request streams.
func (m *Model) splicedChat(p sdk.ChatCompletionNewParams, settings provider.Settings, keyed, stream bool) sdk.ChatCompletionNewParams {
	shell := p
	var lists [][][]byte
	key := m.shellKey(settings)
	key.stream = stream
	if holeFor(&shell.Messages, &lists) {
		key.spliced |= 1
	} else if len(p.Messages) > 0 {
		keyed = false // the shell holds the messages
	}
	if holeFor(&shell.Tools, &lists) {
		key.spliced |= 2
	} else if len(p.Tools) > 0 {
		keyed = false
	}
	if body, ok := splice(&chatShells, key, keyed, shell, lists); ok {
		param.SetJSON(body, &p)
	}
	return p
}

// splice returns shell's encoding with lists spliced in, its shell made
// from shell once for each key of shells when keyed.
func splice(shells *provider.SharedShells[shellKey], key shellKey, keyed bool, shell json.Marshaler, lists [][][]byte) ([]byte, bool) {
	if len(lists) == 0 {
		return nil, false
	}
	var s *provider.Shell
	var ok bool
	if keyed {
		s, ok = shells.Get(key, len(lists), escapeHTML, shell.MarshalJSON)
	} else if raw, err := shell.MarshalJSON(); err == nil {
		s, ok = provider.NewShell(raw, len(lists), escapeHTML)
	}
	if !ok {
		return nil, false
	}
	return s.Splice(lists), true
}

// direct returns what to hand the SDK for p, and the options that come
// with it, so that the SDK sends the body spliced (which p carries as its
// JSON) without encoding or compacting it again: p with an empty object as
// its JSON, and options that set the body and then the config's extra
// body fields, which the client's own options set on the empty object and
// which are set again here the same way in the same order. The SDK's
// "stream" comes after every call option, as it does on the body it
// encodes. A platform's client options may read or change the body, so a
// platform's request, or one not spliced, is sent as it is.
func direct[T param.ParamStruct, PT param.InferPtr[T]](m *Model, p T) (T, []option.RequestOption) {
	v, ok := p.Overrides()
	body, isRaw := v.(json.RawMessage)
	if !ok || !isRaw || m.platform != nil || !provider.PlainKeys(m.cfg.ExtraBody) {
		return p, nil
	}
	param.SetJSON([]byte("{}"), PT(&p))
	// Every attempt hands the SDK the same bytes, not a copy of them: the
	// SDK wraps them in a bytes.Buffer that it only reads (through Bytes,
	// for a bytes.Reader of each attempt's body), and the extra body
	// fields are set by sjson.SetBytes, which builds a new body and leaves
	// the one it is given as it was.
	opts := []option.RequestOption{option.WithRequestBody("application/json", []byte(body))}
	for _, k := range slices.Sorted(maps.Keys(m.cfg.ExtraBody)) {
		opts = append(opts, option.WithJSONSet(k, m.cfg.ExtraBody[k]))
	}
	return p, opts
}
