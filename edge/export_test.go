package edge

// Occupy takes every slot of one of the server's admission bounds, as requests in flight would:
// "in-flight", "pages", "expensive" (the node's), or the directory bound of a slug. release gives them back.
func (s *Server) Occupy(bound string) (release func()) {
	sem := s.admit.inFlight
	switch bound {
	case "in-flight":
	case "pages":
		sem = s.admit.pages
	case "expensive":
		sem = s.admit.expensive
	default:
		sem = s.admit.perDir[shardOf(bound)]
	}
	n := cap(sem) - len(sem)
	for range n {
		sem <- struct{}{}
	}
	return func() {
		for range n {
			<-sem
		}
	}
}

// ShardOf returns the per-directory admission bound a slug hashes to.
func ShardOf(slug string) uint32 { return shardOf(slug) }

// AheadPages waits until every FHIR search page in the making ahead of its request is made, and
// returns how many are kept, and how many requests were answered with one so far.
func (s *Server) AheadPages() (kept int, taken int64) {
	s.fhirAhead.mu.Lock()
	pages := make([]*aheadPage, 0, len(s.fhirAhead.pages))
	for _, p := range s.fhirAhead.pages {
		pages = append(pages, p)
	}
	s.fhirAhead.mu.Unlock()
	for _, p := range pages {
		<-p.done
		if p.body != nil {
			kept++
		}
	}
	return kept, s.fhirAhead.taken.Load()
}
