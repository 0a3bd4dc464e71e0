"""Chinese for course_utils/exercises/lesson10.py (the glossary's terms)."""
MESSAGES = {
    "start from the slow loop ('slow': no fixes), then apply 'fused_optimizer' first.":
        "从慢循环开始（'slow'：不做任何修复），然后第一个应用 'fused_optimizer'。",
    "each variant keeps the fixes before it and adds its own: '{fix}' should be {fixes}.":
        "每个变体保留它之前的所有修复，再加上自己的一个：'{fix}' 应该是 {fixes}。",
    "the last variant must have all five fixes {fixes}.":
        "最后一个变体必须包含全部五个修复 {fixes}。",
    "answer with the name of one fix, one of {fixes}.":
        "请用一个修复的名字作答，从 {fixes} 中选一个。",
    "in your order, '{answer}' saved {saved_us:.0f} us per step; another fix saved more. A fix's "
    "saving is the time per step of the variant before it minus its own (section 3's table).":
        "按你的顺序，'{answer}' 每步节省了 {saved_us:.0f} us；另一个修复节省得更多。一个修复的节省量"
        "等于它前一个变体的每步时间减去它自己的每步时间（见第 3 节的表）。",
    "answer with a Python number, not a tensor: `.item()` turns a one-element tensor into one.":
        "请用 Python 数字作答，而不是张量：`.item()` 可以把只有一个元素的张量变成 Python 数字。",
    "answer with a Python number (got {kind}).":
        "请用 Python 数字作答（你给的是 {kind}）。",
    "pass the function itself (got {kind}).":
        "请传入函数本身（你给的是 {kind}）。",
    "your function read {reads} value(s) from a tensor into Python: a Python `if` on a "
    "tensor (or .item(), float()) waits for the GPU. Keep the comparison a tensor and store it.":
        "你的函数从张量读了 {reads} 个值到 Python：对张量做 Python `if`（或 .item()、float()）"
        "都要等 GPU 算完。让比较结果保持为张量，直接存起来。",
    "for losses {values} the flags should be {want}, you set {got}.":
        "对损失 {values}，标志应为 {want}，你设置的是 {got}。",
    "pass the class itself, not an instance of it: the check builds its own model from your class.":
        "请传入类本身，而不是它的实例：检查会用你的类自己构建模型。",
    "pass your model class (a subclass of IrisMLP), got {kind}.":
        "请传入你的模型类（IrisMLP 的子类），你给的是 {kind}。",
    "on inputs you have not seen, your forward computes something else than the branching one: "
    "torch.where(condition, if_true, if_false) must pick h * 2 where h.sum() > 0, h otherwise.":
        "在你没见过的输入上，你的 forward 算出的结果和带分支的版本不同："
        "torch.where(condition, if_true, if_false) 应在 h.sum() > 0 时选 h * 2，否则选 h。",
    "Dynamo captured {graphs} graph(s) with {breaks} break(s): a Python "
    "`if` on a tensor's value cannot be traced. Compute both outcomes and select with torch.where.":
        "Dynamo 捕获了 {graphs} 个图，有 {breaks} 处图中断：依赖张量值的 Python `if` 无法被追踪。"
        "把两种结果都算出来，再用 torch.where 选择。",
    "section 5 did not compile the mid-sized model in this run (COMPILE='off' or no compiler): nothing to judge.":
        "本次运行中第 5 节没有编译中等规模的模型（COMPILE='off' 或没有编译器）：无从判断。",
    "here a compiled step is not faster than an eager one, so compiling never pays off: answer None.":
        "这里编译后的一步并不比 eager 模式的一步快，所以编译永远不划算：请回答 None。",
    "that is the break-even of one compile; the model compiles twice, so the cost to win back doubles.":
        "这是编译一次的盈亏平衡点；模型会编译两次，所以要赚回的成本翻倍。",
    "the eager model's first call is not free either: what compiling costs is the *extra* time of the "
    "compiled first call over the eager one.":
        "eager 模型的第一次调用也不是免费的：编译的成本是编译后第一次调用比 eager 第一次调用*多出*的时间。",
    "break-even = (cost of the compiles) / (eager seconds per step - compiled seconds per step); each compile "
    "costs (first call compiled - first call eager), from compile_results['mid'] of this run.":
        "盈亏平衡点 = （编译的成本）/（eager 每步秒数 - 编译后每步秒数）；每次编译的成本是"
        "（编译后第一次调用 - eager 第一次调用），数据取自本次运行的 compile_results['mid']。",
}
