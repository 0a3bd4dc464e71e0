"""Chinese for course_utils/exercises/lesson01.py (the glossary's terms)."""
MESSAGES = {
    "with warmup={warmup}, repeats={repeats} your timer called fn {calls} times: call it "
    "warmup times untimed, then once per timed repeat (section 6).":
        "warmup={warmup}、repeats={repeats} 时，你的计时器调用了 fn {calls} 次：应该先不计时地调用 warmup 次，"
        "再在每次计时的重复里各调用一次（第 6 节）。",
    "return the median time in seconds, a number; you returned {got!r}":
        "请返回以秒为单位的中位数时间，一个数；你返回的是 {got!r}",
    "your timer measured {got:.2e} s per call on a device whose calls take milliseconds: "
    "it read the clock while the work was still queued. Where must the sync go (section 6)?":
        "你的计时器测得每次调用 {got:.2e} s，可这个设备上每次调用要花几毫秒：它在工作还在排队时就读了时钟。"
        "同步应该放在哪里（第 6 节）？",
    "that is the mean: one load spike drags it up. Report the median of the repeats.":
        "这是平均值：一次负载尖峰就会把它拉高。请报告各次重复的中位数。",
    "with warmup={warmup}, repeats={repeats} you reported {got:.4f} s: the slow first calls or "
    "the warm-up's queued work leaked into a timed repeat. Sync after the warm-up (before the "
    "first clock read) and after each timed call, and take the median.":
        "warmup={warmup}、repeats={repeats} 时，你报告的是 {got:.4f} s：开头几次慢调用，或者预热时排队的工作，"
        "混进了某次计时。请在预热之后（第一次读时钟之前）和每次计时调用之后同步，并取中位数。",
    "the result must keep the batch's structure: the same dict keys, lists stay lists and tuples "
    "tuples, and values that are not tensors (a name, a count) unchanged. Lists and dicts have no "
    ".to (section 5): go into them and rebuild them.":
        "结果必须保持小批量的结构：字典的键不变，列表仍是列表，元组仍是元组，不是张量的值（名字、计数）原样保留。"
        "列表和字典没有 .to（第 5 节）：要进到它们里面，重新构建它们。",
    "some tensors of the returned batch are on {on}, not all on the device you were given. "
    "Tensors can sit in lists, tuples and dicts inside the batch, at any depth; and x.to(...) returns "
    "the moved tensor, it leaves x where it was (section 2).":
        "返回的小批量里有些张量在 {on} 上，并没有全部放到给定的设备上。张量可能藏在小批量里任意深度的列表、"
        "元组和字典中；另外，x.to(...) 返回的是移动后的张量，x 本身留在原处（第 2 节）。",
    "the input batch changed device: build a new batch, do not modify the caller's.":
        "传入的小批量换了设备：请构建一个新的小批量，不要修改调用者的那个。",
    "answer with a tuple of three booleans for "
    "(a) x.to('cpu') is x  (b) x.to(torch.float64) is x  (c) model.to('cpu') is model":
        "请用由三个布尔值组成的元组回答："
        "(a) x.to('cpu') is x  (b) x.to(torch.float64) is x  (c) model.to('cpu') is model",
    "(a): when nothing changes (same device, same dtype), what does Tensor.to return (section 2)?":
        "(a)：什么都不用变时（设备相同，dtype 也相同），Tensor.to 返回什么（第 2 节）？",
    "(b): a new dtype needs new storage. Can that be the object you called .to on (section 2)?":
        "(b)：新的 dtype 需要新的存储。它还可能是你调用 .to 的那个对象吗（第 2 节）？",
    "(c): what does Module.to return, and does it change the module in place (section 3)?":
        "(c)：Module.to 返回什么？它会原地修改模块吗（第 3 节）？",
    "a number of seconds": "秒数",
    "a time is positive: one product does 2 n^3 FLOP, and the rate (GFLOP/s) is FLOP per second.":
        "时间是正数：一次矩阵乘法做 2 n^3 次 FLOP，而速率（GFLOP/s）是每秒的 FLOP 数。",
    "that looks like milliseconds: the check wants seconds.": "这看起来是毫秒：检查要的是秒。",
    "GFLOP/s means billions of FLOP per second: multiply the rate by 1e9.":
        "GFLOP/s 表示每秒十亿次 FLOP：要把速率乘以 1e9。",
    "a product of two n x n matrices does about 2 n^3 FLOP: did you forget the 2?":
        "两个 n x n 矩阵相乘大约做 2 n^3 次 FLOP：你是不是忘了那个 2？",
    "that is about the time of the largest size timed. Doubling n multiplies the "
    "FLOP by 8 (n^3), so it multiplies the time by 8 at the same rate.":
        "这差不多是计时过的最大尺寸所用的时间。n 翻一倍，FLOP 变成 8 倍（n^3），速率不变时时间也变成 8 倍。",
    "doubling n multiplies the FLOP by 8 (n^3), not by 2.": "n 翻一倍，FLOP 变成 8 倍（n^3），而不是 2 倍。",
    "your answer is {ratio:.2g} times the expected one. Count the FLOP of one 4096 x 4096 product "
    "(2 n^3) and divide by the rate at the largest size timed, n={largest}, in FLOP per second.":
        "你的答案是预期值的 {ratio:.2g} 倍。先算出一次 4096 x 4096 矩阵乘法的 FLOP（2 n^3），"
        "再除以计时过的最大尺寸 n={largest} 处的速率（换算成每秒 FLOP）。",
}
