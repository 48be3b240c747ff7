//go:build !unix

package replicate

import (
	"errors"
	"os"
)

// mapHeader maps nothing here: the watcher stats the WAL instead.
func mapHeader(*os.File) ([]byte, error) { return nil, errors.New("no shared mappings on this system") }
