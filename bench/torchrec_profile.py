#!/usr/bin/env python3
"""Compute samples measured on TorchRec's CPU runtime (embshard.torchrec.profile), for
`embshard profile calibrate`: a judge of that runtime (docs/judge.md, "TorchRec's CPU runtime").

    $(bash scripts/setup_python.sh --torchrec) bench/torchrec_profile.py OUT.jsonl [--samples 240] [--seed 1]

OUT.jsonl grows to --samples samples and resumes where a stopped run left it. Each pair of samples
is one run of two gloo ranks (about 11 s a pair on a 2-core machine). bench/torchrec_fit.sh
collects and fits in one command.
"""

import argparse

import embshard.torchrec


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--samples", type=int, default=240)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-tables", type=int, default=15)
    parser.add_argument("--max-gib", type=float, default=2.0, help="the most bytes of one sample's tables")
    parser.add_argument("--batch", type=int, default=8192, help="the global batch (each table sees all of it)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=11)
    args = parser.parse_args()
    count = embshard.torchrec.profile(args.out, args.samples, seed=args.seed, batch_size=args.batch,
                                      max_tables=args.max_tables, max_bytes=int(args.max_gib * (1 << 30)),
                                      warmup=args.warmup, repeats=args.repeats,
                                      log=lambda line: print(line, flush=True))
    print(f"{args.out}: {count} samples")


if __name__ == "__main__":
    main()
