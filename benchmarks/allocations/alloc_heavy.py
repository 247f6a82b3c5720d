# An allocation-heavy Python workload for benchmarks/allocations/compare.sh: builds and drops
# dicts, strings and lists (with PYTHONMALLOC=malloc every object is a malloc/free).
import sys

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 6
total = 0
for r in range(rounds):
    table = {}
    for i in range(150000):
        key = "k%d-%d" % (r, i)
        table[key] = [i, str(i) * 3, (i, r)]
    total += sum(len(v[1]) for v in table.values())
    del table
print(total)
