//! Throughput of the event queue (`farlink_core::sched::EventQueue`).
//!
//! Two workloads, each at a small and a large number of pending events:
//! - `hold`: the classic "hold" model of event-list benchmarks — pop the earliest event and
//!   push one a random delay later, so the queue stays at its size; one element = one pop plus
//!   one push.
//! - `fill_drain`: push N events at random times, then pop them all; one element = one push
//!   plus one pop.
//!
//! The payload is an enum of the size the engine's events will have (24 bytes). Delays come
//! from a `StreamRng`, drawn before timing starts. Runs in well under a minute:
//! `cargo bench -p farlink-core --bench queue`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use farlink_core::link::Packet;
use farlink_core::rng::StreamRng;
use farlink_core::sched::EventQueue;
use farlink_core::time::{SimDuration, SimTime};
use std::hint::black_box;
use std::time::Duration;

/// Stand-in for the engine's event enum.
#[allow(dead_code)]
#[derive(Clone, Copy, Debug)]
enum Ev {
    Wake { component: u32 },
    Arrival { link: u32, pkt: Packet },
}

/// Delays up to 10 ms in nanoseconds, a mix of equal-time ties and spread-out times.
fn delays(n: usize) -> Vec<u64> {
    let mut rng = StreamRng::derive(1, "bench/queue");
    (0..n)
        .map(|_| {
            let r = rng.next_u64();
            if r % 8 == 0 {
                0
            } else {
                r % 10_000_000
            }
        })
        .collect()
}

fn bench_hold(c: &mut Criterion) {
    let mut group = c.benchmark_group("hold");
    const OPS: usize = 10_000;
    for size in [1_000usize, 100_000] {
        let d = delays(size + OPS);
        group.throughput(Throughput::Elements(OPS as u64));
        group.bench_function(format!("{size}_pending"), |b| {
            b.iter_batched_ref(
                || {
                    let mut q = EventQueue::with_capacity(size + 1);
                    for (i, &dt) in d[..size].iter().enumerate() {
                        q.push(
                            SimTime::from_nanos(dt),
                            Ev::Wake {
                                component: i as u32,
                            },
                        );
                    }
                    q
                },
                |q| {
                    for &dt in &d[size..] {
                        let (at, ev) = q.pop().expect("queue stays full");
                        let next = match ev {
                            Ev::Wake { component } => Ev::Arrival {
                                link: component,
                                pkt: Packet {
                                    id: dt,
                                    size_bytes: 1500,
                                    ..Packet::default()
                                },
                            },
                            Ev::Arrival { link, .. } => Ev::Wake { component: link },
                        };
                        q.push(at + SimDuration::from_nanos(dt), next);
                    }
                    black_box(q.peek_time());
                },
                BatchSize::LargeInput,
            );
        });
    }
    group.finish();
}

fn bench_fill_drain(c: &mut Criterion) {
    let mut group = c.benchmark_group("fill_drain");
    for size in [1_000usize, 100_000] {
        let d = delays(size);
        group.throughput(Throughput::Elements(size as u64));
        group.bench_function(format!("{size}"), |b| {
            let mut q = EventQueue::with_capacity(size);
            b.iter(|| {
                for (i, &dt) in d.iter().enumerate() {
                    q.push(
                        q.now() + SimDuration::from_nanos(dt),
                        Ev::Wake {
                            component: i as u32,
                        },
                    );
                }
                let mut n = 0u32;
                while let Some((_, ev)) = q.pop() {
                    if let Ev::Wake { component } = ev {
                        n = n.wrapping_add(component);
                    }
                }
                black_box(n)
            });
        });
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_hold, bench_fill_drain
}
criterion_main!(benches);
