// The Tokio peer of suite `io` (bench/io/README.md): a line echo server with one task per
// connection (tokio::spawn), on a multi-threaded runtime of --workers threads, speaking the
// echo servers' control protocol (bench/io/echo_server.hpp): "ready port=P" on fd 3, "done"
// (it runs no compute phases), then it serves until its stdin reaches end of file. Only
// --mode net with --reps 0: the idle-connections and saturated-echo benches; the compute
// kernel of the echo-under-compute benches is not ported.
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;

use promptly_bench_peers::protocol;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn main() {
    let mut args = protocol::Args::parse();
    let mode = args.get_string("mode", "net");
    let workers = args.get("workers", 2);
    let (_n, _cutoff) = (args.get("n", 36), args.get("cutoff", 12));
    let (_warmup, reps, _min_loaded) = (args.get("warmup", 0), args.get("reps", 0), args.get("min-loaded-ms", 0));
    args.finish();
    if mode != "net" {
        protocol::fail("the Tokio echo server serves --mode net only");
    }
    if reps != 0 || workers < 1 {
        protocol::fail("the Tokio echo server runs no compute phases: --reps must be 0, --workers >= 1");
    }
    // SAFETY: the driver opens fd 3 as this process's control channel and nothing else owns it.
    let mut control = unsafe { File::from_raw_fd(3) };
    let mut say = move |line: &str| {
        if let Err(e) = control.write_all(format!("{line}\n").as_bytes()) {
            protocol::fail(&format!("control channel: {e}"));
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers as usize)
        .enable_io()
        .build()
        .unwrap_or_else(|e| protocol::fail(&format!("tokio runtime: {e}")));
    // A backlog of 4096, as the Promptly server and Go (net.core.somaxconn) listen with:
    // TcpListener::bind's 1024 overflowed while the idle bench opened 19,000 connections, whose
    // SYNs were then retried seconds later (5000 connections took 28 s to open).
    let listener = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind("127.0.0.1:0".parse().expect("a literal address"))?;
            socket.listen(4096)
        })
        .unwrap_or_else(|e| protocol::fail(&format!("listen: {e}")));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
    rt.spawn(async move {
        loop {
            let (sock, _) = match listener.accept().await {
                Ok(c) => c,
                Err(e) => {
                    // Out of descriptors and the like: say so and keep accepting.
                    eprintln!("accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = sock.set_nodelay(true);
            tokio::spawn(async move {
                let (r, mut w) = sock.into_split();
                let mut lines = BufReader::new(r);
                let mut line = String::new();
                loop {
                    line.clear();
                    match lines.read_line(&mut line).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {
                            if w.write_all(line.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            });
        }
    });
    say(&format!("ready port={port}"));
    say("done");
    // Serve until the driver closes our stdin.
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    rt.shutdown_background();
}
