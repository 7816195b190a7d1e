"""Workload generators for promptly-sim and sim_real_run (promptly-sim-workload-1 JSON,
src/sim/workload.hpp): one place for the DAG shapes that bench/sim/figures.py and
bench/sim/validate.py use. Nodes are [work_us, [successors]], appended so that every edge points
forward, in the order src/sim/workload.cpp's generators append them."""
import json

FORMAT = "promptly-sim-workload-1"


def add_node(nodes, work_us):
    nodes.append([float(work_us), []])
    return len(nodes) - 1


def fork_join(nodes, node_us, build_children):
    """A fork node, the children build_children() appends (each an (entry, exit) pair), a join
    node: appended in that order."""
    f = add_node(nodes, node_us)
    parts = build_children()
    j = add_node(nodes, node_us)
    for entry, exit_ in parts:
        nodes[f][1].append(entry)
        nodes[exit_][1].append(j)
    return f, j


def parallel_loop(iterations, iteration_us, grain, node_us=0.0):
    """Binary splitting down to chunks of <= grain iterations (cilk_for)."""
    nodes = []

    def loop(it):
        if it <= grain:
            x = add_node(nodes, it * iteration_us)
            return x, x
        half = it // 2
        return fork_join(nodes, node_us, lambda: [loop(half), loop(it - half)])

    loop(max(iterations, 1))
    return nodes


def fork_join_tree(depth, leaf_us, node_us=0.0):
    """A divide and conquer of `depth` levels: 2^(depth-1) leaves of leaf_us."""
    return parallel_loop(2 ** (max(depth, 1) - 1), leaf_us, 1, node_us)


def fib_calls(k):
    a, b = 0, 1
    for _ in range(k + 1):
        a, b = b, a + b
    return 2 * a - 1


def fib(n, cutoff, us_per_call, node_us=0.05, piece_us=None):
    """fib(n) as a fork-join DAG; below the cutoff serial work in proportion to its call count:
    one strand, or a chain of strands of piece_us (a serial base case that calls yield, a strand
    boundary, as it goes)."""
    nodes = []

    def build(k):
        if k <= cutoff or k < 2:
            work = us_per_call * fib_calls(k)
            if piece_us is None or work <= piece_us:
                x = add_node(nodes, work)
                return x, x
            pieces = int(-(-work // piece_us))
            first = last = add_node(nodes, work / pieces)
            for _ in range(pieces - 1):
                nxt = add_node(nodes, work / pieces)
                nodes[last][1].append(nxt)
                last = nxt
            return first, last
        return fork_join(nodes, node_us, lambda: [build(k - 1), build(k - 2)])

    build(n)
    return nodes


def sequence(pieces):
    """Pieces run one after another: each piece is a node list whose entry is its first node and
    exit its last (as parallel_loop and fork_join_tree build them); the exit of one precedes the
    entry of the next."""
    nodes = []
    for piece in pieces:
        base = len(nodes)
        if base:
            nodes[base - 1][1].append(base)
        nodes.extend([w, [s + base for s in succ]] for w, succ in piece)
    return nodes


def chain(n, node_us):
    return [[float(node_us), [i + 1] if i + 1 < n else []] for i in range(max(n, 1))]


def task_tree(depth, us):
    """Taskflow's binary tree: each task has two successors, no joins."""
    count = 2 ** depth - 1
    return [[float(us), [2 * i + 1, 2 * i + 2] if 2 * i + 2 < count else []] for i in range(count)]


def work_of(nodes):
    return sum(w for w, _ in nodes)


def span_of(nodes):
    finish = [0.0] * len(nodes)
    span = 0.0
    for i, (w, succ) in enumerate(nodes):
        finish[i] += w
        span = max(span, finish[i])
        for s in succ:
            finish[s] = max(finish[s], finish[i])
    return span


def request(nodes, pool=0, release_us=0.0, kind=""):
    return {"pool": pool, "release_us": float(release_us), "kind": kind, "nodes": nodes}


def workload(pools, requests):
    return {"format": FORMAT, "pools": pools, "requests": requests}


def write(path, pools, requests):
    with open(path, "w") as f:
        json.dump(workload(pools, requests), f)
