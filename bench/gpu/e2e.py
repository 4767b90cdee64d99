"""kquant quantize end to end: the process's wall time with --backend auto
and --backend cpu on every image in a folder at k = 16 and 256, rounds
alternating; prints each run, then the medians and auto's backend.

usage: python3 e2e.py KQUANT IMAGES [ROUNDS]"""
import json, os, statistics, subprocess, sys, time

kq, images = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
times, backend = {}, {}
for r in range(rounds):
    for name in sorted(os.listdir(images)):
        for k in (16, 256):
            for be in ("auto", "cpu"):
                t = time.perf_counter()
                p = subprocess.run([kq, "quantize", "--backend", be, "-k", str(k), "--json", "--force",
                                    "-o", "/tmp/e2e-q.png", os.path.join(images, name)], capture_output=True, text=True)
                wall = (time.perf_counter() - t) * 1e3
                if p.returncode != 0:
                    print("FAIL", name, k, be, p.stderr.strip()[:300])
                    continue
                d = json.loads(p.stdout)
                times.setdefault((name, k, be), []).append(wall)
                backend[(name, k, be)] = d["backend"]
                print(r, name, k, be, d["backend"], "%.1f" % wall, d["timings_ms"]["cluster"], flush=True)
print("image k auto-backend auto-ms cpu-ms auto/cpu")
for (name, k, be), ts in sorted(times.items()):
    if be != "auto":
        continue
    a, c = statistics.median(ts), statistics.median(times.get((name, k, "cpu"), [float("nan")]))
    print(name, k, backend[(name, k, be)], "%.1f" % a, "%.1f" % c, "%.3f" % (a / c))
