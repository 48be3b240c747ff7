package export

import (
	"context"
	"errors"

	"github.com/dirsvc/dirsvc"
)

type hsdsWriter struct{}

func newHSDSWriter(r *run, readable func(string) bool) *hsdsWriter { return &hsdsWriter{} }

func (w *hsdsWriter) begin(dirsvc.Kind) error { return errors.New("hsds: not yet") }
func (w *hsdsWriter) write(context.Context, *record) error { return nil }
func (w *hsdsWriter) end(dirsvc.Kind) error { return nil }
func (w *hsdsWriter) commit() ([]File, error) { return nil, nil }
func (w *hsdsWriter) abort() {}
