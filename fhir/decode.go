package fhir

import "github.com/dirsvc/dirsvc"

// DecodeView decodes a stored brief view of a record of kind for this mapper, as DecodeView does for
// the members the mapper reads: those its mapping reads, and for a mapper that gathers search
// values (not BodiesOnly) those they read too (decodeMapped). The view it returns shares body's
// memory: body must stay unchanged while the view is used.
func (m *Mapper) DecodeView(kind dirsvc.Kind, body []byte) (any, error) {
	return decodeMapped(kind, body, !m.BodiesOnly)
}
