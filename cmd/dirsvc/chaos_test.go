package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dirsvc/dirsvc"
	"github.com/dirsvc/dirsvc/replicate/s3test"
)

// chaosRecords are the live public services the writers rewrite, one writer each: a writer's
// sequence numbers say in which order its writes committed.
var chaosRecords = []string{"svc_gp", "svc_counsel", "svc_refuge"}

// chaosWrite is one write through the admin API and what became of it.
type chaosWrite struct {
	record  string
	seq     int
	status  int    // -1: no answer (the primary was killed, or not listening)
	pending string // Replication-Pending
	epoch   int64  // losses of the primary's folder before the write was sent
	kills   int64  // kills of the primary before the write was sent
	took    time.Duration
	outage  bool // the bucket was down when the write was sent or answered
}

// acknowledged reports whether the write was answered as committed and in the replica folder;
// durable is whether the bucket confirmed it too.
func (w chaosWrite) acknowledged() bool {
	return w.status == 200 || w.status == 202 && w.pending == "object-storage"
}
func (w chaosWrite) durable() bool { return w.status == 200 }

// chaos is one run: the fake bucket, the primary and edge processes, and the writes.
type chaos struct {
	t       *testing.T
	c       *cluster // primaryData holds the replica folder
	bucket  *s3test.Store
	s3Args  []string
	rng     *rand.Rand
	client  *http.Client
	wipes   atomic.Int64 // losses of the primary's folder
	kills   atomic.Int64
	lines   map[string]map[string]any // the fixture's records, by public ID
	mu      sync.Mutex
	writes  []chaosWrite
	logs    []*processLog // every primary's, in order
	outages []string
	// whether each killed start on an empty folder was killed before or after it had restored
	interrupted []string
}

// TestReplicationSurvivesChaos runs a primary and an edge as processes, writers through the
// admin API, and chaos: the primary SIGKILLed and restarted at random moments, sometimes onto an
// empty data folder restored from the bucket, and the bucket unreachable for seconds at a time
// (refusing connections, or hanging) while writes go on. Every acknowledged write must survive
// every restart it could survive (a write answered 200 all of them; one answered 202 all but a
// loss of the primary's folder), and at the end the primary, the edge and a fresh restore from the
// bucket hold the same value of every record, published and canonical, none older than its last
// acknowledged write. DIRSVC_CHAOS_SEED=N replays a run's schedule.
func TestReplicationSurvivesChaos(t *testing.T) {
	slowScenario(t)
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	seed := uint64(20261122)
	if s := os.Getenv("DIRSVC_CHAOS_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DIRSVC_CHAOS_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("seed %d (DIRSVC_CHAOS_SEED=%d replays this schedule)", seed, seed)
	x := startChaos(t, seed)

	stop := make(chan struct{})
	var writers sync.WaitGroup
	for _, id := range chaosRecords {
		writers.Add(1)
		go func() { defer writers.Done(); x.write(id, stop) }()
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		writers.Wait()
	}()
	x.waitForWrites("the first writes", 10)
	x.waitBucket() // the bucket holds every file before the first loss of the folder

	start := time.Now()
	for i, step := range x.plan() {
		x.pause()
		t.Logf("%5.1fs step %d: %s", time.Since(start).Seconds(), i+1, step)
		switch step {
		case "kill":
			x.kill(false)
		case "wipe":
			x.kill(true)
		case "wipe-interrupted":
			x.interruptedRestore()
		case "outage", "outage-kill", "outage-wipe":
			x.outage(strings.TrimPrefix(step, "outage-"))
		}
	}
	chaosTime := time.Since(start)
	x.pause()
	close(stop)
	writers.Wait()

	x.report(chaosTime)

	converge := time.Now()
	x.waitBucket()
	x.waitEdge()
	t.Logf("the bucket and the edge caught up %.1fs after the writes stopped", time.Since(converge).Seconds())
	x.checkFinal()
}

// startChaos starts the fake bucket, imports the small fixture, and starts a primary replicating
// to its replica folder and the bucket, and an edge following it.
func startChaos(t *testing.T, seed uint64) *chaos {
	bucket := s3test.New(t) // the processes of the binary inherit its environment
	s3Args := bucket.Flags("chaos", time.Second)

	c := &cluster{bin: buildBinary(t), primaryData: filepath.Join(t.TempDir(), "data")}
	c.replica = filepath.Join(c.primaryData, "replica")
	if out, err := exec.Command(c.bin, "import", "--data", c.primaryData, smallFixture).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	x := &chaos{t: t, c: c, bucket: bucket, s3Args: s3Args, rng: rand.New(rand.NewPCG(seed, seed)),
		client: &http.Client{Timeout: 20 * time.Second}, lines: map[string]map[string]any{}}
	for _, id := range chaosRecords {
		var rec map[string]any
		if err := json.Unmarshal(fixtureRecord(t, id, ""), &rec); err != nil {
			t.Fatal(err)
		}
		x.lines[id] = rec
	}
	c.primaryArgs = append([]string{"primary", "--base-url", testBaseURL, "--data", c.primaryData, "--replica-dir", c.replica,
		"--replication-token", testReplicationToken, "--admin-token", testAdminToken, "--replica-wait", "2s"}, s3Args...)
	c.primary, c.primaryCmd, c.primaryLog = startMode(t, c.bin, c.primaryArgs...)
	x.logs = append(x.logs, c.primaryLog)
	c.edgeArgs = append([]string{"edge", "--data", t.TempDir(), "--primary", "http://" + c.primary,
		"--replication-token", testReplicationToken,
		"--anonymous-per-minute", "10000000", "--anonymous-per-day", "100000000"}, s3Args...)
	c.edge, _, c.edgeLog = startMode(t, c.bin, c.edgeArgs...)
	x.waitFor("the edge serves the directory", func() bool { _, err := x.read(c.edge, "svc_gp"); return err == nil })
	return x
}

// plan is the run's schedule: a loss of the primary's folder with the bucket up, one whose restore
// is killed, an outage of the bucket while writes go on, a kill during an outage, and a loss of the
// folder during an outage (the primary must refuse to start until the bucket is back), each at
// least once, among kills and more of the same, in an order the seed decides.
func (x *chaos) plan() []string {
	steps := []string{"wipe", "wipe-interrupted", "outage", "outage-kill", "outage-wipe"}
	for range 3 {
		switch n := x.rng.IntN(10); {
		case n < 6:
			steps = append(steps, "kill")
		case n < 8:
			steps = append(steps, "wipe")
		default:
			steps = append(steps, []string{"outage", "outage-kill"}[x.rng.IntN(2)])
		}
	}
	x.rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	return steps
}

// pause lets the writers run for a random while, and until some write was acknowledged since.
func (x *chaos) pause() {
	time.Sleep(time.Duration(200+x.rng.IntN(1000)) * time.Millisecond) // the schedule, not a wait for work
	x.waitForWrites("writes after the last step", x.acknowledgedCount()+1)
}

// write rewrites one record over and over through the primary's admin API, its name carrying a
// sequence number, and records every answer.
func (x *chaos) write(id string, stop <-chan struct{}) {
	for seq := 1; ; seq++ {
		select {
		case <-stop:
			return
		default:
		}
		rec := x.lines[id]
		rec["name"] = fmt.Sprintf("Chaos %s %d", id, seq)
		line, _ := json.Marshal(rec)
		w := chaosWrite{record: id, seq: seq, epoch: x.wipes.Load(), kills: x.kills.Load(), outage: x.bucket.State() != s3test.Up, status: -1}
		req, _ := http.NewRequest("PUT", "http://"+x.c.primary+"/admin/v1/d/small/records/"+id, bytes.NewReader(line))
		req.Header.Set("Authorization", "Bearer "+testAdminToken)
		req.Header.Set("Content-Type", "application/json")
		sent := time.Now()
		resp, err := x.client.Do(req)
		if err == nil {
			resp.Body.Close()
			w.status, w.pending = resp.StatusCode, resp.Header.Get("Replication-Pending")
		}
		w.took, w.outage = time.Since(sent), w.outage || x.bucket.State() != s3test.Up
		x.mu.Lock()
		x.writes = append(x.writes, w)
		x.mu.Unlock()
		if err != nil {
			select { // the primary is down: try again shortly, without spinning
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

func (x *chaos) acknowledgedCount() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, w := range x.writes {
		if w.acknowledged() {
			n++
		}
	}
	return n
}

func (x *chaos) waitForWrites(what string, n int) {
	x.t.Helper()
	x.waitFor(what, func() bool { return x.acknowledgedCount() >= n })
}

// floor returns, for every record, the highest sequence number that must have survived: of the
// writes answered 200, and, with survivePending, of those answered 202 since the last loss of the
// primary's folder.
func (x *chaos) floor(survivePending bool) map[string]int {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := map[string]int{}
	for _, w := range x.writes {
		if w.durable() || survivePending && w.acknowledged() && w.epoch == x.wipes.Load() {
			out[w.record] = max(out[w.record], w.seq)
		}
	}
	return out
}

// read returns the sequence number in a record's published name at a node.
func (x *chaos) read(addr, id string) (int, error) {
	resp, err := x.client.Get("http://" + addr + "/v1/d/small/services/" + id)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct{ Name string }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		return 0, fmt.Errorf("GET %s at %s: %d %v", id, addr, resp.StatusCode, err)
	}
	return seqOf(id, v.Name)
}

// seqOf returns the sequence number of a name the writers gave (0 for the fixture's).
func seqOf(id, name string) (int, error) {
	if !strings.HasPrefix(name, "Chaos ") {
		return 0, nil
	}
	return strconv.Atoi(strings.TrimPrefix(name, "Chaos "+id+" "))
}

// checkFloor checks that no record at the primary is older than floor.
func (x *chaos) checkFloor(when string, floor map[string]int) {
	x.t.Helper()
	for _, id := range chaosRecords {
		got, err := x.read(x.c.primary, id)
		if err != nil {
			x.fatalf("%s: %v", when, err)
		}
		if got < floor[id] {
			x.fatalf("%s: the primary has %s at %d, but write %d was acknowledged: an acknowledged write was lost", when, id, got, floor[id])
		}
	}
}

// kill SIGKILLs the primary and starts it again on the same address: on the same folder, or, with
// wipe, on an empty one restored from the bucket. No acknowledged write is lost that the restart
// could keep.
func (x *chaos) kill(wipe bool) {
	x.t.Helper()
	x.sigkill()
	floor := x.floor(!wipe)
	if wipe {
		x.wipe()
	}
	x.restart()
	if restored := strings.Contains(x.c.primaryLog.String(), "restored the data folder"); restored != wipe {
		x.fatalf("the primary restored its data folder: %v; it was lost: %v", restored, wipe)
	}
	x.checkFloor(map[bool]string{false: "after a kill", true: "after a restore onto an empty folder"}[wipe], floor)
}

// interruptedRestore SIGKILLs the primary and loses its folder, and kills the primary started on
// the empty folder at a random moment of its start (restoring, or replicating what it restored);
// the next start serves the folder whole.
func (x *chaos) interruptedRestore() {
	x.t.Helper()
	x.sigkill()
	floor := x.floor(false)
	x.wipe()
	cmd := exec.Command(x.c.bin, append(x.c.primaryArgs, "--addr", x.c.primary)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		x.t.Fatal(err)
	}
	time.Sleep(time.Duration(x.rng.IntN(300)) * time.Millisecond) // the schedule, not a wait for work
	cmd.Process.Kill()
	cmd.Wait()
	x.kills.Add(1)
	x.logs = append(x.logs, &processLog{buf: out})
	x.restart()
	x.checkFloor("after a restore onto an empty folder was killed", floor)
	x.interrupted = append(x.interrupted, map[bool]string{true: "after", false: "before"}[strings.Contains(out.String(), "restored the data folder")])
}

func (x *chaos) sigkill() {
	x.t.Helper()
	if err := x.c.primaryCmd.Process.Signal(syscall.SIGKILL); err != nil {
		x.t.Fatal(err)
	}
	x.c.primaryCmd.Wait()
	x.kills.Add(1)
}

// wipe loses the primary's data folder with its replica folder (a lost volume). The primary is
// dead: writes sent from now on cannot reach the folder lost.
func (x *chaos) wipe() {
	x.t.Helper()
	x.wipes.Add(1)
	if err := os.RemoveAll(x.c.primaryData); err != nil {
		x.t.Fatal(err)
	}
}

func (x *chaos) restart() {
	x.t.Helper()
	_, cmd, log := restartAt(x.t, x.c.bin, x.c.primary, x.c.primaryArgs...)
	x.c.primaryCmd, x.c.primaryLog = cmd, log
	x.logs = append(x.logs, log)
}

// outage makes the bucket unreachable for a few seconds, refusing connections and hanging in turn,
// while writes go on: they answer 202 within a bounded time, and the edge follows them. Meanwhile,
// with "kill", the primary is killed and starts again on its folder, keeping every write answered
// 202 so far, and answers 202 again; with "wipe", its folder is lost too: it must refuse to start
// (exit non-zero, saying why) until the bucket is back, and then restores from it.
func (x *chaos) outage(kind string) {
	x.t.Helper()
	hang := len(x.outages)%2 == 1
	down := map[bool]s3test.State{false: s3test.Down, true: s3test.Hung}[hang]
	length := time.Duration(2500+x.rng.IntN(1500)) * time.Millisecond
	began := time.Now()
	x.bucket.Set(down)
	x.waitPending("while the bucket is down")
	switch kind {
	case "kill":
		x.sigkill()
		floor := x.floor(true)
		x.restart()
		x.checkFloor("after a kill while the bucket is down", floor)
		x.waitPending("after a restart while the bucket is down")
	case "wipe":
		x.sigkill()
		floor := x.floor(false)
		x.wipe()
		code, out := x.mustNotStart()
		if code <= 0 || !strings.Contains(out, "restore the empty data folder") {
			x.fatalf("a primary on an empty folder with the bucket down: exit %d, want a failure naming the restore:\n%s", code, out)
		}
		x.bucket.Set(s3test.Up)
		x.restart()
		x.checkFloor("after a restore onto an empty folder once the bucket was back", floor)
	}
	time.Sleep(time.Until(began.Add(length))) // the schedule, not a wait for work
	x.bucket.Set(s3test.Up)
	what := map[bool]string{false: "refusing", true: "hanging"}[hang]
	x.outages = append(x.outages, fmt.Sprintf("%s %.1fs%s", what, time.Since(began).Seconds(),
		map[string]string{"kill": " (primary killed meanwhile)", "wipe": " (folder lost meanwhile)"}[kind]))
}

// waitPending waits for a write sent to the current primary process and answered 202 while the
// bucket is down, and for the edge to serve it.
func (x *chaos) waitPending(when string) {
	x.t.Helper()
	kills := x.kills.Load()
	var w chaosWrite
	x.waitFor("a write answered 202 "+when, func() bool {
		x.mu.Lock()
		defer x.mu.Unlock()
		for _, v := range slices.Backward(x.writes) {
			if v.kills == kills && v.outage && v.acknowledged() && !v.durable() {
				w = v
				return true
			}
		}
		return false
	})
	x.waitFor("the edge serves a write answered 202 "+when, func() bool {
		got, err := x.read(x.c.edge, w.record)
		return err == nil && got >= w.seq
	})
}

// mustNotStart runs the primary, which must exit without serving; it returns the exit code and
// what the process wrote.
func (x *chaos) mustNotStart() (int, string) {
	x.t.Helper()
	cmd := exec.Command(x.c.bin, append(x.c.primaryArgs, "--addr", x.c.primary)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		x.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		x.fatalf("a primary on an empty folder with the bucket down did not exit within 30s:\n%s", out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// primaryHealth reads the primary's health route.
func (x *chaos) primaryHealth() (dirsvc.NodeStatus, error) {
	var st dirsvc.NodeStatus
	resp, err := x.client.Get("http://" + metricsAddr(x.t, x.c.primary) + "/healthz")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitBucket waits until the primary's health route says the bucket holds every file's position.
func (x *chaos) waitBucket() {
	x.t.Helper()
	x.waitFor("the bucket holds everything", func() bool {
		st, err := x.primaryHealth()
		if err != nil || st.Replication == nil || !st.Replication.Healthy || st.Replication.StorageLagSeconds != 0 || st.Replication.StorageFailing {
			return false
		}
		for _, f := range st.Files {
			if f.StoredPosition == nil || *f.StoredPosition != f.Position {
				return false
			}
		}
		return true
	})
}

// waitEdge waits until the edge serves every record as the primary does, and is healthy.
func (x *chaos) waitEdge() {
	x.t.Helper()
	x.waitFor("the edge serves what the primary does", func() bool {
		for _, id := range chaosRecords {
			p := "/v1/d/small/services/" + id
			at, want := get(x.t, x.c.edge, p, nil), get(x.t, x.c.primary, p, nil)
			want.body = bytes.ReplaceAll(want.body, []byte(x.c.primary), []byte(x.c.edge))
			if at.status != 200 || want.status != 200 || !bytes.Equal(at.body, want.body) {
				return false
			}
		}
		return get(x.t, x.c.edge, "/healthz", nil).status == 200
	})
}

// checkFinal checks every record at the primary, at the edge, and in a fresh restore from the
// bucket, published and canonical: the same everywhere, and none older than its last
// acknowledged write.
func (x *chaos) checkFinal() {
	x.t.Helper()
	floor, sent := x.floor(true), map[string]int{}
	for _, w := range x.writes {
		sent[w.record] = max(sent[w.record], w.seq)
	}
	restored := filepath.Join(x.t.TempDir(), "restored")
	if out, err := exec.Command(x.c.bin, append([]string{"restore", "--data", restored}, x.s3Args...)...).CombinedOutput(); err != nil {
		x.fatalf("a fresh restore from the bucket: %v\n%s", err, out)
	}
	values := map[string]map[string]int{} // by where, by record
	for where, addr := range map[string]string{"primary": x.c.primary, "edge": x.c.edge} {
		values[where] = x.readAll(addr)
	}
	values["canonical in the restore"] = x.canonical(restored)
	served, _, _ := startServe(x.t, x.c.bin, restored)
	values["restore"] = x.readAll(served)

	// The primary stops cleanly after all that, and its canonical records agree.
	if err := x.c.primaryCmd.Process.Signal(syscall.SIGTERM); err != nil {
		x.t.Fatal(err)
	}
	if err := x.c.primaryCmd.Wait(); err != nil {
		x.fatalf("the primary exited with %v after SIGTERM", err)
	}
	values["canonical at the primary"] = x.canonical(x.c.primaryData)

	for _, id := range chaosRecords {
		want := values["primary"][id]
		if want < floor[id] || want > sent[id] {
			x.t.Errorf("%s: the primary has write %d; the last acknowledged is %d, the last sent %d", id, want, floor[id], sent[id])
		}
		for where, got := range values {
			if got[id] != want {
				x.t.Errorf("%s: %s has write %d, the primary %d", id, where, got[id], want)
			}
		}
	}
	if x.t.Failed() {
		x.t.Logf("primary's last log:\n%s", x.c.primaryLog)
	}
}

// readAll reads every record's sequence number at a node.
func (x *chaos) readAll(addr string) map[string]int {
	x.t.Helper()
	out := map[string]int{}
	for _, id := range chaosRecords {
		n, err := x.read(addr, id)
		if err != nil {
			x.fatalf("%v", err)
		}
		out[id] = n
	}
	return out
}

// canonical reads every record's sequence number from the canonical records (ops) of a data
// folder, with `dirsvc record show`.
func (x *chaos) canonical(data string) map[string]int {
	x.t.Helper()
	out := map[string]int{}
	for _, id := range chaosRecords {
		b, err := exec.Command(x.c.bin, "record", "--data", data, "--dir", "small", "show", id).Output()
		var rec struct{ Name string }
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			x.fatalf("record show %s in %s: %v\n%s", id, data, err, b)
		}
		if out[id], err = seqOf(id, rec.Name); err != nil {
			x.fatalf("record show %s: %v", id, err)
		}
	}
	return out
}

// report logs the run's numbers.
func (x *chaos) report(chaosTime time.Duration) {
	x.mu.Lock()
	defer x.mu.Unlock()
	byStatus := map[string]int{}
	var slowest chaosWrite
	for _, w := range x.writes {
		k := strconv.Itoa(w.status)
		switch {
		case w.status == -1:
			k = "no answer"
		case w.pending != "":
			k += " (" + w.pending + ")"
		}
		if w.outage {
			k += " during an outage"
		}
		byStatus[k]++
		if w.status > 0 && w.took > slowest.took {
			slowest = w
		}
	}
	x.t.Logf("%d writes: %v; slowest answer %s (%d%s)", len(x.writes), byStatus, slowest.took.Round(time.Millisecond),
		slowest.status, map[bool]string{true: " during an outage"}[slowest.outage])
	x.t.Logf("%d kills, %d of them losing the folder; restores killed (before or after restoring): %v; outages: %s",
		x.kills.Load(), x.wipes.Load(), x.interrupted, strings.Join(x.outages, ", "))
	x.t.Logf("chaos %.1fs", chaosTime.Seconds())
	for _, w := range x.writes {
		if w.status >= 400 && w.status < 500 {
			x.t.Errorf("a write was refused: %+v", w)
		}
		if w.status > 0 && w.took > 10*time.Second {
			x.t.Errorf("a write took %s to answer (the bucket's calls are bounded by 1s, the wait for it by 2s): %+v", w.took, w)
		}
	}
}

// waitFor polls a condition on the processes until it holds, failing with their logs after 30s.
func (x *chaos) waitFor(what string, cond func() bool) {
	x.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			x.fatalf("%s: not within 30s", what)
		}
		time.Sleep(20 * time.Millisecond) // other processes' state: polled, with a deadline
	}
}

// fatalf fails the test with the logs of the processes.
func (x *chaos) fatalf(format string, args ...any) {
	x.t.Helper()
	var logs strings.Builder
	for i, l := range x.logs {
		fmt.Fprintf(&logs, "--- primary process %d:\n%s", i+1, l)
	}
	fmt.Fprintf(&logs, "--- edge:\n%s", x.c.edgeLog)
	x.t.Fatalf(format+"\n%s", append(args, logs.String())...)
}
