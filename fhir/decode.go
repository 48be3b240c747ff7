package fhir

import "github.com/dirsvc/dirsvc"

// DecodeView decodes a stored brief view of a record of kind for this mapper, as DecodeView does;
// a mapper that makes bodies only decodes just the members its mapping reads (decodeMapped), and
// the view it returns shares body's memory: body must stay unchanged while the view is used.
func (m *Mapper) DecodeView(kind dirsvc.Kind, body []byte) (any, error) {
	if !m.BodiesOnly {
		return DecodeView(kind, body)
	}
	return decodeMapped(kind, body)
}
