"""Chinese for course_utils/exercises/lesson07.py (the glossary's terms)."""
MESSAGES = {
    "No space left on device (injected by the check)":
        "磁盘空间已满（由检查故意注入）",
    "pass the function itself, `save` (got {kind}).":
        "请传入函数本身，即 `save`（你传的是 {kind}）。",
    "save(state, path) must leave a file at `path` that torch.load(path, weights_only=True) reads back as `state`.":
        "save(state, path) 必须在 `path` 留下一个文件，用 torch.load(path, weights_only=True) 读回来正好是 `state`。",
    "after a successful save the folder also holds {others}: rename the temporary file onto the target.":
        "保存成功后，文件夹里还多出了 {others}：应该把临时文件重命名为目标文件。",
    "the temporary file is in another folder: os.replace is atomic only within one file system (section 6).":
        "临时文件在另一个文件夹里：os.replace 只在同一个文件系统内才是原子的（第 6 节）。",
    "a save that failed half-way (we injected a full disk) destroyed the previous checkpoint: "
    "write to a temporary file in the same folder and move it onto the name only when it is complete.":
        "一次中途失败的保存（我们注入了“磁盘已满”）毁掉了之前的检查点："
        "先写到同一文件夹里的临时文件，等它完整写好后再把它移到目标文件名上。",
    "the failed save left {others} behind: remove the temporary file when the save fails, then re-raise.":
        "失败的保存留下了 {others}：保存失败时先删掉临时文件，再重新抛出异常。",
    "the new name may point at bytes still in the operating system's cache: flush and os.fsync the "
    "temporary file before os.replace (section 6).":
        "新文件名指向的字节可能还在操作系统的缓存里：在 os.replace 之前，先 flush 并 os.fsync 临时文件（第 6 节）。",
    "pass the function itself, `resume` (got {kind}).":
        "请传入函数本身，即 `resume`（你传的是 {kind}）。",
    "a folder without checkpoints means a fresh start: return step 0 (load_latest returns None).":
        "没有检查点的文件夹意味着从头开始：返回第 0 步（load_latest 会返回 None）。",
    "the checkpoint was saved after step {saved}; your resume returned step {step!r}.":
        "检查点是在第 {saved} 步之后保存的；你的 resume 返回的却是第 {step!r} 步。",
    "resumed and continued, the weights differ from the uninterrupted run's by up to {drift:.1e}. A resumed "
    "run must restore everything the next steps depend on: weights, optimizer moments, the LR schedule, "
    "and every random generator (batches, dropout, noise): section 5.":
        "恢复后继续训练，权重与不中断运行的结果最多相差 {drift:.1e}。恢复的运行必须还原后续步骤依赖的一切："
        "权重、优化器的矩估计、学习率调度，以及每一个随机数生成器（小批量、暂退法、噪声）：第 5 节。",
    "answer with a Python float, not a tensor (`.item()` converts a one-element tensor).":
        "请用 Python 的 float 作答，不要用张量（`.item()` 能转换只有一个元素的张量）。",
    "answer with a number in percent (got {kind}).":
        "请用百分数（一个数）作答（你给的是 {kind}）。",
    "that is this run's saving *with* AdamW, printed in section 3. Without optimizer state the fixed "
    "part is only the weights: add them to each step's peak and compare again.":
        "这是本次运行*带着* AdamW 时节省的比例，第 3 节打印过。没有优化器状态时，固定部分只有权重："
        "把权重加到每一步的峰值上，再比较一次。",
    "that is the share of the *activations* saved. The whole step also holds the weights and the "
    "gradients, which stay whatever you recompute.":
        "这是*激活值*节省的比例。整个训练步还要存放权重和梯度，不管你重计算什么，它们都在。",
    "give it in percent (0-100), not as a fraction.":
        "请用百分数（0-100）表示，不要用小数。",
    "you left the weights out: they are part of the whole-step memory with any optimizer.":
        "你漏掉了权重：不管用什么优化器，它们都是整个训练步内存的一部分。",
    "whole-step memory without optimizer state = weights_mib + peak_mib[s]; compare s = n_sqrt with s = 1: "
    "100 x (1 - with / without).":
        "没有优化器状态时，整个训练步的内存 = weights_mib + peak_mib[s]；比较 s = n_sqrt 与 s = 1："
        "100 x (1 - 用检查点 / 不用检查点)。",
}
