"""Chinese for the messages every lesson shares: exercise verdicts and number hints
(``exercises/core.py``, ``exercises/_types.py``), predictions (``exercises/predict.py``), parameter and
device errors (``params.py``, ``device.py``), progress lines (``progress.py``) and the missing-GPU line
(``ledger.py``)."""

MESSAGES = {
    # exercises/core.py
    "correct": "正确",
    "wrong": "错误",
    "not attempted": "未作答",
    "replace the `...` with your answer and run the cell again": "把 `...` 换成你的答案，再运行这个单元",
    "this is still the starter code: change the lines marked `# TODO` and run the cell again":
        "这还是起始代码：修改标有 `# TODO` 的行，再运行这个单元",
    "your answer raised {name}: {err}": "你的答案抛出了 {name}：{err}",
    "you gave NaN where {what} is expected: one of the numbers it was computed from is missing.":
        "这里需要{what}，你给的是 NaN：计算它所用的某个数缺失了。",
    "you gave None where {what} is expected: did the function or cell forget to `return` it?":
        "这里需要{what}，你给的是 None：函数或单元是不是忘了 `return` 它？",
    "you gave a tensor (shape {shape}) where {what} is expected: `.item()` turns a one-element tensor "
    "into a Python number.":
        "这里需要{what}，你给的是一个张量（形状 {shape}）：`.item()` 把只有一个元素的张量变成 Python 数。",
    " It still requires grad, so holding it keeps the autograd graph of its step alive (memory that grows "
    "with every tensor kept).":
        "它还需要梯度（requires grad），所以留着它就会让这一步的自动微分计算图一直存活（每多留一个张量，占用的内存就多一份）。",
    "you gave the string {value!r} where {what} is expected: write the number itself, without quotes.":
        "这里需要{what}，你给的是字符串 {value!r}：直接写数字本身，不要加引号。",
    "you gave {kind} {value!r} where {what} is expected.": "这里需要{what}，你给的是 {kind} {value!r}。",
    # exercises/_types.py
    "your answer": "你的答案",
    "{what} is {answer!r}, not a number: compute it as a float or an int.":
        "{what}是 {answer!r}，不是数：请把它算成 float 或 int。",
    "{what} is a {kind}; the check wants a plain Python number. Compute it from Python floats, or take the "
    "value out of a one-element tensor with .item().":
        "{what}是 {kind}；检查需要一个普通的 Python 数。请用 Python 浮点数计算，或用 .item() 从只有一个元素的张量中取出数值。",
    "{what} is a {kind}, not a number: hand in one float or int.": "{what}是 {kind}，不是数：请交一个 float 或 int。",
    # exercises/predict.py
    "measured": "测得",
    "estimated": "估算出",
    "too low": "偏低",
    "too high": "偏高",
    "⬜ no prediction written: this run {found} {shown}. Next time write your guess first: a guess you "
    "commit to is what shows you which part of your picture was wrong.":
        "⬜ 没有写预测：本次运行{found} {shown}。下次先写下你的猜测：只有认真押上的猜测，才会告诉你脑中的图景哪里错了。",
    "⬜ the prediction must be a number (it is {kind}); this run {found} {shown}.":
        "⬜ 预测必须是一个数（现在是 {kind}）；本次运行{found} {shown}。",
    "🎯 you predicted {guess:.3g}, this run {found} {shown}: within {close:g}×":
        "🎯 你预测 {guess:.3g}，本次运行{found} {shown}：相差在 {close:g}× 以内",
    "❌ you predicted {guess:.3g}, this run {found} {shown}: a prediction must be positive":
        "❌ 你预测 {guess:.3g}，本次运行{found} {shown}：预测必须是正数",
    "↔ you predicted {guess:.3g}, this run {found} {shown}: {factor:.1f}× {where}":
        "↔ 你预测 {guess:.3g}，本次运行{found} {shown}：{where} {factor:.1f}×",
    ". Why: {why}": "。原因：{why}",
    ".": "。",
    # params.py
    "{name} must be an integer in [{lo}, {hi}], got {value!r} ({kind})":
        "{name} 必须是 [{lo}, {hi}] 中的整数，收到的是 {value!r}（{kind}）",
    "{name} must be in [{lo}, {hi}], got {value}": "{name} 必须在 [{lo}, {hi}] 之内，收到的是 {value}",
    "{name} must be a number in [{lo}, {hi}], got {value!r}": "{name} 必须是 [{lo}, {hi}] 中的数，收到的是 {value!r}",
    "{name} must be True or False, got {value!r}": "{name} 必须是 True 或 False，收到的是 {value!r}",
    "{name} must be one of {choices}, got {value!r}": "{name} 必须是 {choices} 之一，收到的是 {value!r}",
    "{name} must be a non-empty list of integers, got {values!r}": "{name} 必须是非空的整数列表，收到的是 {values!r}",
    # device.py
    "DEVICE must be one of {choices} (optionally 'cuda:N'), got {requested!r}":
        "DEVICE 必须是 {choices} 之一（也可以写 'cuda:N'），收到的是 {requested!r}",
    "DEVICE={requested!r} is not available on this machine; available: {have}. {why}":
        "这台机器上没有 DEVICE={requested!r}；可用的有：{have}。{why}",
    "DEVICE={requested!r}: this machine has {count} CUDA device(s).": "DEVICE={requested!r}：这台机器只有 {count} 个 CUDA 设备。",
    "this PyTorch build ({version}) has no CUDA support. ": "这个 PyTorch 版本（{version}）不支持 CUDA。",
    "this PyTorch build ({version}) found no usable NVIDIA GPU. ": "这个 PyTorch 版本（{version}）没有找到可用的 NVIDIA GPU。",
    "Install a CUDA build of PyTorch on a machine with an NVIDIA GPU and driver (see "
    "https://pytorch.org/get-started/locally/), or run the notebook with DEVICE='auto' or 'cpu'.":
        "请在装有 NVIDIA GPU 和驱动的机器上安装 CUDA 版的 PyTorch（见 https://pytorch.org/get-started/locally/），"
        "或用 DEVICE='auto' 或 'cpu' 运行本笔记本。",
    "MPS needs macOS 12.3+ on Apple silicon with a PyTorch build that includes it.":
        "MPS 需要 Apple 芯片上的 macOS 12.3 及以上版本，以及包含 MPS 支持的 PyTorch。",
    # progress.py
    "{label}: {done}{of} done, {elapsed:.0f} s": "{label}：已完成 {done}{of}，用时 {elapsed:.0f} s",
    ", about {left:.0f} s left": "，大约还剩 {left:.0f} s",
    # ledger.py
    "No GPU here, so this run does not measure: {figures}. {shown}. To measure them, run this lesson on a "
    "GPU (Colab or Kaggle: Runtime > change runtime type > GPU) and save a results card "
    "(docs/contributing-results.md).":
        "这里没有 GPU，所以本次运行不测量：{figures}。{shown}。要测量它们，请在 GPU 上运行本课（Colab 或 Kaggle："
        "Runtime > change runtime type > GPU），并保存一张结果卡（docs/contributing-results.md）。",
    "The table at the end shows them from the GPU results card(s) {cards}": "本课末尾的表格给出 GPU 结果卡 {cards} 中的这些数字",
    "No GPU results card is shipped yet": "课程还没有附带 GPU 结果卡",
    "; ": "；",
    "result": "结果",
    "unit": "单位",
    "this machine": "本机",
    "{device} (published)": "{device}（公开数据）",
    "no reference": "没有参考结果",
    "published, not measured by the course: {source}": "公开数据，不是课程测得的：{source}",
    "This machine vs {against}: 1 figure (click to open)": "本机对比 {against}：1 个数字（点击展开）",
    "This machine vs {against}: {n} figures (click to open)": "本机对比 {against}：{n} 个数字（点击展开）",
    # fixbyfix.py (lesson 10)
    "middle half of {rounds} rounds {low:+.0%} to {high:+.0%}": "{rounds} 轮的中间一半在 {low:+.0%} 到 {high:+.0%} 之间",
    "one round: no spread measured": "只有一轮：没有测到波动",
    "too small to tell on this run ({spread})": "本次运行中差别太小，无法判断（{spread}）",
    "saved {share:.0%} of the step ({spread})": "每步节省 {share:.0%}（{spread}）",
    "cost {share:.0%} more ({spread})": "每步多花 {share:.0%}（{spread}）",
    "card {name}: compiled steps ran at {iris:.2f}x (iris) and {mid:.2f}x (a mid-sized MLP) the eager speed":
        "结果卡 {name}：编译后每步的速度是 eager 的 {iris:.2f}x（iris）和 {mid:.2f}x（中等大小的 MLP）",
    ", after {seconds:.1f} s of compiling iris": "，此前编译 iris 用了 {seconds:.1f} s",
    "no results card has these figures yet": "还没有结果卡含有这些数字",
    "not measured yet: run the deeper notebook": "尚未测量：请运行深入篇（英文）",
    "does not hold for these small models: compiled steps were slower, and compiling costs seconds":
        "对这些小模型不成立：编译后的每一步更慢，而且编译本身要花好几秒",
    "holds for these models, once the compile time is paid back": "对这些模型成立，前提是编译时间已经赚回来",
    "depends on the model: faster for some, slower for others": "取决于模型：有的更快，有的更慢",
    # ddp_helpers.py (lesson 09's workers)
    "bench: {world} x {batch} samples per step, {threads} thread(s) per process: {ms:.1f} ms/step "
    "({compute_ms:.1f} ms without all-reduce), {rate:.0f} samples/s":
        "基准：每步 {world} x {batch} 个样本，每个进程 {threads} 个线程：{ms:.1f} ms/步"
        "（不做全规约时 {compute_ms:.1f} ms），{rate:.0f} 样本/s",
    # launch.py (folded logs)
    "{title} ({n} lines):": "{title}（{n} 行）：",
    "{title} ({n} lines; {left_out} left out here):": "{title}（{n} 行；这里省略 {left_out} 行）：",
    "... {left_out} more lines ...": "……还有 {left_out} 行……",
    "{title} ({n} lines): click to open": "{title}（{n} 行）：点击展开",
    # mm_sweep.py (lesson 01's claims table)
    "CPU: {small_rate:.3g} GFLOP/s at n={small}, {big_rate:.3g} at n={big}":
        "CPU：n={small} 时 {small_rate:.3g} GFLOP/s，n={big} 时 {big_rate:.3g}",
    "{label}: {low:.2g}x the CPU at n={lo}, {high:.3g}x at n={hi}": "{label}：n={lo} 时是 CPU 的 {low:.2g}x，n={hi} 时 {high:.3g}x",
    "; no GPU figure here": "；这里没有 GPU 数字",
    "not checked here: no GPU in this run and no GPU results card": "这里无法检验：本次运行没有 GPU，也没有 GPU 结果卡",
    "right for large products only: at the smallest size fixed costs dominate": "只对大矩阵乘法成立：在最小的尺寸上，固定开销占主导",
    "right at every size compared": "在比较的每个尺寸上都成立",
    "not in these figures: a GPU was under 10x the CPU even at the largest size compared":
        "这些数字不支持：即使在比较的最大尺寸上，GPU 也不到 CPU 的 10x",
}
