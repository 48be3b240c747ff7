package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/dirsvc/dirsvc/dirdb"
	"github.com/dirsvc/dirsvc/edge"
)

// memoryShare is the share of the machine's memory (its cgroup's limit, else its physical memory)
// the Go runtime is held to when neither GOMEMLIMIT nor --memory-limit says otherwise: the rest is
// left to SQLite's page caches (outside the Go heap), the kernel's file cache and the stacks.
const memoryShare = 0.8

// minMemoryLimit is the smallest limit accepted: below it the service cannot hold a directory's
// working set and the collector would run without pause.
const minMemoryLimit = 64 << 20

// memorySettings sets the Go runtime's soft memory limit and returns it and the view cache budget
// that goes with it: a quarter of the limit, at most dirdb.DefaultViewCacheBudget. GOMEMLIMIT in
// the environment wins (the runtime has applied it already); else flag, a size such as 1536MiB or
// 2GB; else memoryShare of the machine's memory.
func memorySettings(log *slog.Logger, flag string) (limit, viewCache int64, err error) {
	source := "GOMEMLIMIT"
	switch env := os.Getenv("GOMEMLIMIT"); {
	case env == "off":
		log.Info("memory", "limit", "off", "from", source, "viewCache", fmt.Sprintf("%d MiB", dirdb.DefaultViewCacheBudget>>20))
		return math.MaxInt64, dirdb.DefaultViewCacheBudget, nil
	case env != "":
		if limit, err = parseSize(env); err != nil {
			return 0, 0, fmt.Errorf("GOMEMLIMIT: %w", err)
		}
	case flag != "":
		source = "--memory-limit"
		if limit, err = parseSize(flag); err != nil {
			return 0, 0, fmt.Errorf("--memory-limit: %w", err)
		}
	default:
		machine, from, err := machineMemory()
		if err != nil {
			return 0, 0, fmt.Errorf("find the machine's memory (give --memory-limit or GOMEMLIMIT): %w", err)
		}
		source = fmt.Sprintf("%.0f%% of %s (%d MiB)", memoryShare*100, from, machine>>20)
		limit = int64(float64(machine) * memoryShare)
	}
	if limit < minMemoryLimit {
		return 0, 0, fmt.Errorf("memory limit %d MiB (%s) is below the %d MiB the service needs", limit>>20, source, minMemoryLimit>>20)
	}
	debug.SetMemoryLimit(limit)
	viewCache = min(int64(dirdb.DefaultViewCacheBudget), limit/4)
	log.Info("memory", "limit", fmt.Sprintf("%d MiB", limit>>20), "from", source, "viewCache", fmt.Sprintf("%d MiB", viewCache>>20))
	return limit, viewCache, nil
}

// pageCacheBudget returns the memory a node's kept record pages may take under the memory limit: a
// sixteenth of it, at most edge.DefaultPageCacheBytes.
func pageCacheBudget(limit int64) int64 { return min(edge.DefaultPageCacheBytes, limit/16) }

// parseSize reads a size in bytes, with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024)
// or KB, MB, GB, TB (powers of 1000), as GOMEMLIMIT takes them.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	for _, u := range units {
		if n, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f*mult >= 1<<62 {
		return 0, errors.New("want a size such as 1536MiB or 2GB")
	}
	return int64(f * mult), nil
}

// machineMemory returns the memory the process may use: its cgroup's limit (v2, else v1) when it has
// one, else the physical memory.
func machineMemory() (int64, string, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 {
			return n, "the cgroup's memory.max", nil
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64); err == nil && n > 0 && n < 1<<60 {
			return n, "the cgroup's memory limit", nil
		}
	}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, "", fmt.Errorf("read MemTotal: %w", err)
			}
			return kb << 10, "physical memory", nil
		}
	}
	return 0, "", errors.New("no MemTotal in /proc/meminfo")
}
