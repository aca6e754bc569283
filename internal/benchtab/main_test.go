package main

import (
	"strings"
	"testing"
)

// TestTable: go test's output of two packages with equal benchmark names,
// a plugin sub-benchmark beside its peers, and an explicit pair, as the
// table bench.sh prints.
func TestTable(t *testing.T) {
	res, order := parse(strings.NewReader(benchOutput))
	var b strings.Builder
	printTable(&b, res, order, pairRows(res, order, pairs{"BenchmarkLinkExecTrue=BenchmarkShTrue"}))
	if b.String() != wantTable {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), wantTable)
	}
}

const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/mu-org/mu-plugins/backend/ssh
BenchmarkLinkExecTrue-2             	     100	   2800000 ns/op	    1200 B/op	      20 allocs/op
BenchmarkShTrue-2                   	     100	  222000000 ns/op
BenchmarkCold/plugin-2              	      10	  97000000 ns/op	   5.0 MB/s
BenchmarkCold/ssh-2                 	      10	 222000000 ns/op
BenchmarkCold/ssh-master-2          	      10	   7650000 ns/op
ok  	github.com/mu-org/mu-plugins/backend/ssh	12.3s
pkg: github.com/mu-org/mu-plugins/backend/docker
BenchmarkCold/plugin-2              	      10	  44500000 ns/op
BenchmarkCold/cli-2                 	      10	  61500000 ns/op
BenchmarkLinkExecTrue-2             	     100	    250000 ns/op
BenchmarkShTrue-2                   	     100	  56000000 ns/op
ok  	github.com/mu-org/mu-plugins/backend/docker	10.1s
`

const wantTable = `benchmark                          peer                                 ours         peer   ratio
ssh.Cold                           ssh                               97.00ms     222.00ms   0.44x
ssh.Cold                           ssh-master                        97.00ms       7.65ms  12.68x
docker.Cold                        cli                               44.50ms      61.50ms   0.72x
ssh.LinkExecTrue                   ssh.ShTrue                         2.80ms     222.00ms   0.01x
docker.LinkExecTrue                docker.ShTrue                     250.0µs      56.00ms   0.00x

other figures:
  ssh.LinkExecTrue                                   2.80ms  1200 B/op 20 allocs/op
  ssh.Cold/plugin                                    97.00ms  5.0 MB/s
`
