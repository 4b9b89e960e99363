// SPDX-License-Identifier: MIT
//
// The fiber suite's Tokio peer: tasks on a current_thread runtime, the one
// a single-core Tokio program builds, timed the way perf/suite_fiber.c
// times percore's fibers (a clock read every 1024 operations, the run's
// length set by --seconds). The runtime has no I/O or timer driver: these
// cases need neither, and with one every yield_now that empties the run
// queue would also poll it (an epoll_wait). The timed code is itself a
// spawned task, as percore's is a fiber.
//
//   tokio-fiber --case switch|pingpong|spawn_join --seconds S
//   tokio-fiber --version
//
// prints "CASE NS", nanoseconds per operation:
//
//   switch      a tokio::task::yield_now() round trip of one task;
//   pingpong    two tasks yielding to each other, per round trip;
//   spawn_join  one tokio::spawn() of a task and the await of its
//               JoinHandle, in batches of 64.
//
// The bench runs it with the process on the CPU of the percore worker it
// stands beside.

use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task;

// Passed in by build_tokio.sh, read from the Cargo.lock it resolved.
const TOKIO_VERSION: &str = match option_env!("PEER_TOKIO_VERSION") {
    Some(v) => v,
    None => "unknown",
};

const USAGE: &str = "usage: tokio-fiber --case switch|pingpong|spawn_join --seconds S";
const CHECK: u64 = 1024; // operations between clock reads
const BATCH: usize = 64; // tasks per spawn_join batch

fn bad(msg: &str) -> ! {
    eprintln!("tokio-fiber: {}\n{}", msg, USAGE);
    exit(2);
}

async fn switch(d: Duration) -> (u64, Duration) {
    let mut n = 0;
    let start = Instant::now();
    loop {
        for _ in 0..CHECK {
            task::yield_now().await;
        }
        n += CHECK;
        let el = start.elapsed();
        if el >= d {
            return (n, el);
        }
    }
}

async fn pingpong(d: Duration) -> (u64, Duration) {
    let stop = Arc::new(AtomicBool::new(false));
    let partner = {
        let stop = stop.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                task::yield_now().await;
            }
        })
    };
    let r = switch(d).await;
    stop.store(true, Ordering::Relaxed);
    let _ = partner.await;
    r
}

async fn spawn_join(d: Duration) -> (u64, Duration) {
    let mut handles = Vec::with_capacity(BATCH);
    let (mut n, mut sum) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        for _ in 0..CHECK as usize / BATCH {
            for i in 0..BATCH {
                handles.push(tokio::spawn(async move { i as u64 }));
            }
            for h in handles.drain(..) {
                sum += h.await.unwrap_or(0);
            }
        }
        n += CHECK;
        let el = start.elapsed();
        if el >= d {
            // Every task ran and its result was seen.
            if sum != n / BATCH as u64 * (BATCH * (BATCH - 1) / 2) as u64 {
                eprintln!("tokio-fiber: lost results");
                exit(1);
            }
            return (n, el);
        }
    }
}

fn main() {
    let mut kase = None;
    let mut seconds = None;
    let mut it = std::env::args().skip(1);

    while let Some(a) = it.next() {
        if a == "--version" {
            println!("tokio-fiber (tokio {})", TOKIO_VERSION);
            return;
        }
        let v = it.next().unwrap_or_else(|| bad(&format!("{} needs a value", a)));
        match a.as_str() {
            "--case" => match v.as_str() {
                "switch" | "pingpong" | "spawn_join" => kase = Some(v),
                _ => bad(&format!("unknown case {}", v)),
            },
            "--seconds" => match v.parse::<f64>() {
                Ok(s) if s > 0.0 && s <= 600.0 => seconds = Some(s),
                _ => bad(&format!("bad --seconds {}", v)),
            },
            _ => bad(&format!("unknown argument {}", a)),
        }
    }
    let (kase, seconds) = match (kase, seconds) {
        (Some(k), Some(s)) => (k, s),
        _ => bad("--case and --seconds are required"),
    };
    let d = Duration::from_secs_f64(seconds);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("tokio-fiber: runtime: {}", e);
            exit(1);
        });
    let k = kase.clone();
    let (n, el) = rt.block_on(async move {
        let timed = match k.as_str() {
            "switch" => tokio::spawn(switch(d)),
            "pingpong" => tokio::spawn(pingpong(d)),
            _ => tokio::spawn(spawn_join(d)),
        };
        timed.await.unwrap_or_else(|e| {
            eprintln!("tokio-fiber: {}", e);
            exit(1);
        })
    });
    println!("{} {:.3}", kase, el.as_nanos() as f64 / n as f64);
}
