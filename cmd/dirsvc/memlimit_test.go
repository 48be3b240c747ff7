package main

import (
	"io"
	"log/slog"
	"runtime/debug"
	"testing"
)

func TestMemorySettings(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, c := range []struct {
		name, env, flag string
		limit, cache    int64
	}{
		{"the flag sets the limit and a quarter of it is the view cache", "", "512MiB", 512 << 20, 128 << 20},
		{"GOMEMLIMIT wins over the flag", "300MiB", "2GiB", 300 << 20, 75 << 20},
		{"the view cache is at most 256 MiB", "", "4GB", 4e9, 256 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			limit, cache, err := memorySettings(log, c.flag)
			if err != nil {
				t.Fatal(err)
			}
			if limit != c.limit || cache != c.cache || debug.SetMemoryLimit(-1) != c.limit {
				t.Errorf("limit %d (runtime %d), view cache %d; want %d, %d", limit, debug.SetMemoryLimit(-1), cache, c.limit, c.cache)
			}
		})
	}
	t.Run("without either it is 80% of the machine", func(t *testing.T) {
		t.Setenv("GOMEMLIMIT", "")
		machine, _, err := machineMemory()
		if err != nil {
			t.Skip(err)
		}
		limit, _, err := memorySettings(log, "")
		if err != nil || limit != int64(float64(machine)*0.8) {
			t.Errorf("limit %d (%v), want 80%% of %d", limit, err, machine)
		}
	})
	for _, bad := range []string{"lots", "-1GiB", "12MiB", "1.5XB"} {
		if _, _, err := memorySettings(log, bad); err == nil {
			t.Errorf("--memory-limit %q accepted", bad)
		}
	}
}
