package redact

import (
	"bytes"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// Codec returns a Temporal payload codec that applies JSON to every payload
// whose metadata encoding is "json/plain" (what the default data converter
// produces for structs, maps, strings and numbers) and leaves other payloads
// alone: binary/plain ([]byte), protobuf and nil payloads pass unchanged.
// Decode is the identity, so a workflow reads the redacted values: secrets
// must reach activities by another way than their arguments (the
// environment, a secret store).
//
// Wrap the default converter with it:
//
//	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), r.Codec())
func (r *Redactor) Codec() converter.PayloadCodec { return codec{r} }

type codec struct{ r *Redactor }

// Encode returns redacted copies of the JSON payloads; the inputs are not
// modified.
func (c codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		out[i] = p
		if string(p.GetMetadata()[converter.MetadataEncoding]) != converter.MetadataEncodingJSON {
			continue
		}
		data := c.r.JSON(p.GetData())
		if bytes.Equal(data, p.GetData()) {
			continue
		}
		q := proto.Clone(p).(*commonpb.Payload)
		q.Data = data
		out[i] = q
	}
	return out, nil
}

// Decode returns the payloads as they are.
func (codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	return payloads, nil
}
