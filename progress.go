package dirsvc

import "context"

// Progress follows a long write to a directory (an import, a republish) step by step, for an
// operator who would otherwise wait tens of seconds at a hundred thousand services with nothing to
// read. The steps are named as ImportStats.Steps names them, with "parse" and "check" of an import
// file before them. A write calls its Progress from one goroutine at a time; the calls must return
// at once.
type Progress interface {
	// Step says a step has begun, with the records it goes through (0 when it does not count them).
	Step(name string, total int)
	// Records says how many records the step under way has gone through so far.
	Records(n int)
	// StepDone says the step under way has ended, having gone through n records.
	StepDone(n int)
}

type progressKey struct{}

// WithProgress returns a context whose writes report their progress to p, as
// net/http/httptrace.WithClientTrace does for a request's.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// ProgressOf returns the Progress that ctx carries, or one that ignores every call.
func ProgressOf(ctx context.Context) Progress {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		return p
	}
	return noProgress{}
}

type noProgress struct{}

func (noProgress) Step(string, int) {}
func (noProgress) Records(int)      {}
func (noProgress) StepDone(int)     {}
