// SPDX-License-Identifier: MIT
//
// The fiber suite's Go peer: goroutines as Go programs use them, timed the
// way perf/suite_fiber.c times percore's fibers (a clock read every 1024
// operations, the run's length set by -seconds). Standard library only.
//
//	go-fiber -case switch|pingpong|spawn_join -seconds S
//	go-fiber -version
//
// prints "CASE NS", nanoseconds per operation:
//
//	switch      a runtime.Gosched() round trip of one goroutine;
//	pingpong    a round trip between two goroutines over two unbuffered
//	            channels (send, then wait for the answer);
//	spawn_join  one goroutine started and waited for, in batches of 64
//	            sharing a sync.WaitGroup, each storing its result.
//
// The bench runs it with GOMAXPROCS=1 in the environment, the process on
// the CPU of the percore worker it stands beside.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"
)

const (
	check = 1024 // operations between clock reads
	batch = 64   // goroutines per spawn_join batch
)

func yield(d time.Duration) (uint64, time.Duration) {
	var n uint64
	start := time.Now()
	for {
		for i := 0; i < check; i++ {
			runtime.Gosched()
		}
		n += check
		if el := time.Since(start); el >= d {
			return n, el
		}
	}
}

func pingpong(d time.Duration) (uint64, time.Duration) {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	var n uint64
	start := time.Now()
	for {
		for i := 0; i < check; i++ {
			ping <- i
			<-pong
		}
		n += check
		if el := time.Since(start); el >= d {
			close(ping)
			return n, el
		}
	}
}

func spawnJoin(d time.Duration) (uint64, time.Duration) {
	var res [batch]int
	var n, sum uint64
	start := time.Now()
	for {
		for b := 0; b < check/batch; b++ {
			var wg sync.WaitGroup
			wg.Add(batch)
			for i := 0; i < batch; i++ {
				go func(i int) {
					res[i] = i
					wg.Done()
				}(i)
			}
			wg.Wait()
			for _, r := range res {
				sum += uint64(r)
			}
		}
		n += check
		if el := time.Since(start); el >= d {
			// Every goroutine ran and its result was seen.
			if sum != n/batch*(batch*(batch-1)/2) {
				fmt.Fprintln(os.Stderr, "go-fiber: lost results")
				os.Exit(1)
			}
			return n, el
		}
	}
}

func main() {
	kase := flag.String("case", "", "switch, pingpong or spawn_join")
	seconds := flag.Float64("seconds", 1, "length of the timed run")
	version := flag.Bool("version", false, "print the Go version and exit")
	flag.Parse()
	if *version {
		fmt.Printf("go-fiber (%s)\n", runtime.Version())
		return
	}
	cases := map[string]func(time.Duration) (uint64, time.Duration){
		"switch":     yield,
		"pingpong":   pingpong,
		"spawn_join": spawnJoin,
	}
	run, ok := cases[*kase]
	if !ok || !(*seconds > 0 && *seconds <= 600) || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go-fiber -case switch|pingpong|spawn_join -seconds S")
		os.Exit(2)
	}
	n, el := run(time.Duration(*seconds * float64(time.Second)))
	fmt.Printf("%s %.3f\n", *kase, float64(el.Nanoseconds())/float64(n))
}
