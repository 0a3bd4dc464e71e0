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
        "它还需要梯度（requires grad），所以留着它就会让这一步的自动求导计算图一直存活（每多留一个张量，占用的内存就多一份）。",
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
}
