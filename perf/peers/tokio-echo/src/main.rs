// SPDX-License-Identifier: MIT
//
// The Tokio echo server as the Tokio tutorial writes it: a multi-thread
// runtime, one task per connection, read into a buffer and write_all it
// back until EOF. The only additions are the worker count and pinning, so
// that the bench can give Tokio the same cores it gives percore.
//
//   tokio-echo --port P --workers N [--cpus LIST]
//
// prints "listening on PORT" once bound and serves until killed.

use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::exit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// Passed in by build_tokio.sh, read from the Cargo.lock it resolved.
const TOKIO_VERSION: &str = match option_env!("PEER_TOKIO_VERSION") {
    Some(v) => v,
    None => "unknown",
};

const USAGE: &str = "usage: tokio-echo --port P --workers N [--cpus LIST]";
const MAX_WORKERS: usize = 1024;

struct Args {
    port: u16,
    workers: usize,
    cpus: Vec<usize>,
}

fn bad(msg: &str) -> ! {
    eprintln!("tokio-echo: {}\n{}", msg, USAGE);
    exit(2);
}

fn parse_cpus(list: &str) -> Vec<usize> {
    // SAFETY: sysconf has no preconditions.
    let ncpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    let limit = if ncpus > 0 { ncpus as usize } else { 1 };
    let limit = limit.min(libc::CPU_SETSIZE as usize);
    let mut cpus = Vec::new();
    for s in list.split(',') {
        match s.trim().parse::<usize>() {
            Ok(c) if c < limit => cpus.push(c),
            _ => bad(&format!(
                "bad CPU '{}' in --cpus {} (0..{})",
                s,
                list,
                limit - 1
            )),
        }
    }
    cpus
}

fn parse_args() -> Args {
    let mut port = None;
    let mut workers = None;
    let mut cpus = Vec::new();
    let mut it = std::env::args().skip(1);

    while let Some(a) = it.next() {
        if a == "--version" {
            println!("tokio-echo (tokio {})", TOKIO_VERSION);
            exit(0);
        }
        let v = match it.next() {
            Some(v) => v,
            None => bad(&format!("{} needs a value", a)),
        };
        match a.as_str() {
            "--port" => match v.parse::<u16>() {
                Ok(p) => port = Some(p),
                Err(_) => bad(&format!("bad --port {}", v)),
            },
            "--workers" => match v.parse::<usize>() {
                Ok(n) if n >= 1 && n <= MAX_WORKERS => workers = Some(n),
                _ => bad(&format!("bad --workers {} (1..{})", v, MAX_WORKERS)),
            },
            "--cpus" => cpus = parse_cpus(&v),
            _ => bad(&format!("unknown argument {}", a)),
        }
    }
    match (port, workers) {
        (Some(port), Some(workers)) => Args {
            port,
            workers,
            cpus,
        },
        _ => bad("--port and --workers are required"),
    }
}

fn pin(cpu: usize) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; cpu is below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

async fn echo(mut sock: TcpStream) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if sock.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn serve(listener: TcpListener) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                tokio::spawn(echo(sock));
            }
            // Out of descriptors and the like: keep serving the others.
            Err(e) => eprintln!("tokio-echo: accept: {}", e),
        }
    }
}

fn main() {
    let args = parse_args();
    let cpus = Arc::new(args.cpus);
    let next = AtomicUsize::new(0);

    // Worker threads are started by the runtime; each takes the next CPU.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.workers)
        .enable_all()
        .on_thread_start(move || {
            if cpus.is_empty() {
                return;
            }
            let cpu = cpus[next.fetch_add(1, Ordering::Relaxed) % cpus.len()];
            if let Err(e) = pin(cpu) {
                eprintln!("tokio-echo: pin to CPU {}: {}", cpu, e);
                exit(1);
            }
        })
        .build()
        .unwrap_or_else(|e| {
            eprintln!("tokio-echo: runtime: {}", e);
            exit(1);
        });

    rt.block_on(async {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
        let listener = TcpListener::bind(addr).await.unwrap_or_else(|e| {
            eprintln!("tokio-echo: bind {}: {}", addr, e);
            exit(1);
        });
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let mut out = std::io::stdout();
        let _ = writeln!(out, "listening on {}", port);
        let _ = out.flush();
        // The accept loop is a task like any other, so that all of the
        // server's work runs on the pinned workers and none on main.
        let _ = tokio::spawn(serve(listener)).await;
    });
}
