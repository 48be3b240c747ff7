package dirdb

import "github.com/dirsvc/dirsvc"

// SetImportCounter sets what is told of every import this process commits, with its stats (the
// node's metrics count the records imports write). Nil tells nothing.
func (s *Store) SetImportCounter(count func(dirsvc.ImportStats)) {
	if count == nil {
		s.imported.Store(nil)
		return
	}
	s.imported.Store(&count)
}

// countImport tells the import counter of an import committed.
func (s *Store) countImport(stats dirsvc.ImportStats) {
	if count := s.imported.Load(); count != nil {
		(*count)(stats)
	}
}
