# A Python workload for scripts/bench: dicts, lists, strings, sorting and small objects, all
# allocation-heavy. Usage: python3 -S bench/heap.py N (work grows linearly with N). Prints a
# checksum that does not depend on the machine.
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
seed = 12345


def rnd():
    global seed
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed >> 16


class Rec:
    __slots__ = ("id", "name", "tags")

    def __init__(self, i, name, tags):
        self.id, self.name, self.tags = i, name, tags


words = {}
recs = []
for i in range(1, n + 1):
    w = "".join(chr(97 + rnd() % 26) for _ in range(3 + rnd() % 8))
    words[w] = words.get(w, 0) + 1
    recs.append(Rec(i, w, [rnd() % 100 for _ in range(4)]))
recs.sort(key=lambda r: (r.name, r.id))
total = 0
for r in recs:
    total = (total * 31 + r.id + r.tags[2]) % 1000000007
text = " ".join(r.name.upper() + ":" + str(r.tags[0]) for r in recs)
byfirst = {}
for w in words:
    byfirst.setdefault(w[0], []).append(w)
groups = ",".join(k + str(len(v)) for k, v in sorted(byfirst.items()))
sets = [frozenset(r.tags) for r in recs]
common = len(set(sets))
print("words %d sum %d len %d sets %d" % (len(words), total, len(text), common))
print(groups)
