// Package slowlink holds the end-to-end test of downloads over a slow link: it runs the dirsvc
// binary (a primary and an edge following it) on a generated directory of national size and reads
// its export and Bulk Data files as slow clients do. It is a package of its own so that its minutes,
// spent mostly waiting on paced reads, run beside the other packages' tests rather than after
// cmd/dirsvc's.
package slowlink
