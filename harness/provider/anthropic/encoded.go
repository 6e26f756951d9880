package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
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
