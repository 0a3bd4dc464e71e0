"""Chinese for course_utils/exercises/lesson05.py (the glossary's terms)."""
MESSAGES = {
    "your function returns a dict; return the total bytes per parameter as one int "
    "(weights + gradients + optimizer state).":
        "你的函数返回了一个 dict；请把每个参数的总字节数作为一个 int 返回（权重 + 梯度 + 优化器状态）。",
    "for optimizer={optimizer!r}, precision={precision!r} you return {got!r}, not a number: return "
    "the total bytes per parameter as an int.":
        "optimizer={optimizer!r}、precision={precision!r} 时，你返回的是 {got!r}，不是数：请把每个参数的总字节数作为 int 返回。",
    "for optimizer={optimizer!r}, precision={precision!r} you return {got!r}. Add weights + "
    "gradients + optimizer state: how many buffers does this optimizer keep per parameter, and in "
    "the ZeRO accounting of mixed precision, which fp32 copy does the optimizer hold as well?":
        "optimizer={optimizer!r}、precision={precision!r} 时，你返回的是 {got!r}。把权重 + 梯度 + 优化器状态加起来："
        "这个优化器为每个参数保存几个缓冲区？按 ZeRO 对混合精度的算法，优化器还另外保存哪一份 fp32 副本？",
    "CARD_BYTES = {card_bytes:.3g} counts the card in decimal GB (10^9 bytes), but an \"80 GB\" A100 or "
    "H100 reports about 80 GiB = 80 * 2**30 bytes (81,920 MiB in nvidia-smi). Put CARD_BYTES back to "
    "{gb:.0f} * 2**30.":
        "CARD_BYTES = {card_bytes:.3g} 是按十进制的 GB（10^9 字节）计算显卡容量的，但标称“80 GB”的 A100 或 H100 "
        "报告的约是 80 GiB = 80 * 2**30 字节（nvidia-smi 中为 81,920 MiB）。请把 CARD_BYTES 改回 {gb:.0f} * 2**30。",
    "answer with the stage number, an int from 0 to 3 (or None if not even ZeRO-3 fits)":
        "请用阶段编号作答，即 0 到 3 的 int（如果连 ZeRO-3 都放不下，就答 None）",
    "one of the stages does fit here: work out the per-GPU bytes of every stage with the deeper "
    "notebook's §4 formula.":
        "这里确实有一个阶段放得下：用深入篇第 4 节的公式，算出每个阶段下每块 GPU 的字节数。",
    "with ZeRO-{stage} each GPU still holds {need:.1f} GiB of model states, more than the "
    "card's {card:.0f} GiB. "
    "Which of weights, gradients and state does that stage leave whole on every GPU?":
        "用 ZeRO-{stage} 时，每块 GPU 仍要存 {need:.1f} GiB 的模型状态，超过了显卡的 {card:.0f} GiB。"
        "这个阶段让每块 GPU 完整保留了权重、梯度和优化器状态中的哪几样？",
    "ZeRO-{stage} fits, but a lower stage may fit too and shards less (less communication). "
    "Work out the per-GPU bytes for every stage, from 0 up.":
        "ZeRO-{stage} 放得下，但更低的阶段也许也放得下，而且分片更少（通信更少）。从 0 开始，算出每个阶段下每块 GPU 的字节数。",
    "that uses the card's nominal 16 GB. Use what the card reports, TOTAL_BYTES: a T4 keeps 6.25 % of "
    "its memory for ECC, so it reports less than the box says.":
        "这用的是显卡标称的 16 GB。请用显卡报告的容量 TOTAL_BYTES：T4 把 6.25 % 的显存留给 ECC，"
        "所以它报告的比包装盒上写的少。",
    "count every part per parameter: weights, gradients and AdamW's two moments, in fp32 (§1's table).":
        "把每个参数的每一部分都算上：权重、梯度和 AdamW 的两个矩，全是 fp32（第 1 节的表格）。",
    "answer in parameters, not in billions or GiB: e.g. 1.5e9.": "以参数个数作答，不要以十亿或 GiB 为单位：例如 1.5e9。",
    "parameters = the bytes the card reports / bytes per parameter (weights + gradients + optimizer state).":
        "参数个数 = 显卡报告的字节数 / 每个参数的字节数（权重 + 梯度 + 优化器状态）。",
    "that is one step per sample: a step processes a whole batch. How many steps make the samples?":
        "这相当于每个样本一步，可一步处理的是整个小批量。这些样本一共需要多少步？",
    "check the units: the measured time per step is in seconds, the answer in hours.":
        "检查单位：测得的每步时间以秒为单位，答案要以小时为单位。",
    "total time = steps x time per step after warm-up (§6); use this run's measured step time, "
    "and count the steps the samples need at this batch size.":
        "总时间 = 步数 x 预热后的每步时间（第 6 节）；请用本次运行测得的每步时间，并数出在这个批量大小下这些样本需要多少步。",
}
