// Command plain is the baseline of the read benchmark: a plain net/http handler that answers GET
// /v1/d/{dir}/services/{publicId} with bytes held in memory, fetched once at start from the real
// server, with the same headers. The benchmark compares the real server's requests per second to it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"strings"
)

type answer struct {
	body []byte
	etag string
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "listen address")
	from := flag.String("from", "http://127.0.0.1:8090", "the real server to copy bodies from")
	dir := flag.String("dir", "demo", "directory slug")
	ids := flag.String("ids", "", "file of service public IDs, one a line")
	kept := flag.String("kept", "", "file to write the IDs the real server answered 200 for")
	flag.Parse()
	f, err := os.Open(*ids)
	if err != nil {
		log.Fatal(err)
	}
	answers := map[string]answer{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		id := strings.TrimSpace(sc.Text())
		if id == "" {
			continue
		}
		resp, err := http.Get(*from + "/v1/d/" + *dir + "/services/" + id + "?view=brief")
		if err != nil {
			log.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			log.Fatalf("fetch %s: %v", id, err)
		}
		if resp.StatusCode != 200 {
			continue // hidden from the public (its organisation is, say): not part of the benchmark
		}
		answers[id] = answer{body, resp.Header.Get("ETag")}
		order = append(order, id)
	}
	if err := os.WriteFile(*kept, []byte(strings.Join(order, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/d/{dir}/services/{publicId}", func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.PathValue("publicId")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("X-DIR-Audience", "public")
		h.Set("Cache-Control", "public, s-maxage=60")
		h.Set("ETag", a.etag)
		h.Set("Content-Length", strconv.Itoa(len(a.body)))
		w.Write(a.body)
	})
	fmt.Printf("plain: serving %d bodies on %s\n", len(answers), *addr)
	log.Fatal(http.ListenAndServe(*addr, mux))
}
