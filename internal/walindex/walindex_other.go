//go:build !unix

package walindex

import (
	"errors"
	"os"
)

// mapHeader maps nothing here: looks read the file.
func mapHeader(*os.File) ([]byte, error) { return nil, errors.New("no shared mappings on this system") }
