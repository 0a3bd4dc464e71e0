"""Chinese for course_utils/exercises/lesson06.py (the glossary's terms)."""
MESSAGES = {
    "answer with a Python float, not a tensor: `.item()` turns a one-element tensor into one.":
        "请用 Python 的 float 作答，不要用张量：`.item()` 能把只有一个元素的张量变成 float。",
    "answer with a positive number, a power of two such as 2.0**10 (got {answer!r})":
        "请给出一个正数，而且是 2 的幂，例如 2.0**10（你给的是 {answer!r}）",
    "GradScaler only uses powers of two (multiplying by one changes no mantissa bit): give 2.0**k.":
        "GradScaler 只用 2 的幂（乘以 2 的幂不会改变尾数的任何一位）：请给出 2.0**k。",
    "too small: g_min * S = {product:.2e} is still below 2**-24 = {floor:.2e}, so the smallest gradient "
    "still becomes 0. How many doublings does g_min need to reach 2**-24?":
        "太小了：g_min * S = {product:.2e} 仍然小于 2**-24 = {floor:.2e}，最小的梯度还是会变成 0。"
        "g_min 要翻倍多少次才能达到 2**-24？",
    "big enough, but a smaller power of two also works (and a smaller scale leaves more room before the "
    "largest gradients overflow 65504). Find the smallest k with g_min * 2**k >= 2**-24: math.log2 helps.":
        "够大了，但更小的 2 的幂也行（缩放因子越小，最大的梯度离 65504 的上溢就越远）。"
        "请找出满足 g_min * 2**k >= 2**-24 的最小 k：math.log2 能帮上忙。",
    "answer with a set of op names taken from {ops}":
        "请用一个集合作答，里面是取自 {ops} 的算子名",
    "{unknown} are not among the ops listed: choose from {ops}":
        "{unknown} 不在列出的算子里：请从 {ops} 中选",
    "softmax, layer_norm and sum are on CUDA's fp32 list. The CPU's list is different, not shorter: "
    "run them on a bf16 CPU tensor under torch.autocast('cpu') and print the dtypes (section 2).":
        "softmax、layer_norm 和 sum 在 CUDA 的 fp32 列表上。CPU 的列表不是更短，而是不一样："
        "在 torch.autocast('cpu') 里对一个 bf16 的 CPU 张量运行它们，打印出 dtype（第 2 节）。",
    "linear and matmul are what autocast runs in *low* precision: they are the reason it exists (section 2).":
        "linear 和 matmul 正是 autocast 以*低*精度运行的算子：autocast 就是为它们而生的（第 2 节）。",
    "some ops are missing: run each one under torch.autocast('cpu', dtype=torch.bfloat16) and look at its dtype.":
        "还漏了一些算子：在 torch.autocast('cpu', dtype=torch.bfloat16) 里逐个运行，看看结果的 dtype。",
    "pass the function itself, `amp_step` (got {kind}).":
        "请传入函数本身，即 `amp_step`（你传的是 {kind}）。",
    "PyTorch refused the second step: the scaler was never told a step had ended. "
    "Which call, after scaler.step(optimizer), adapts the scale and starts a new step (section 5)?":
        "PyTorch 拒绝执行第二步：没有人告诉 scaler 上一步已经结束。"
        "在 scaler.step(optimizer) 之后，哪个调用会调整缩放因子并开始新的一步（第 5 节）？",
    "no forward pass at all":
        "无（根本没有运行前向传播）",
    "the first Linear layer ran in {ran_in}: run the forward pass and the loss inside "
    "torch.autocast(device_type=..., dtype=dtype) (section 2).":
        "第一个 Linear 层的运行精度是 {ran_in}：请把前向传播和损失都放进 "
        "torch.autocast(device_type=..., dtype=dtype) 里（第 2 节）。",
    "the scale never changed: after scaler.step(optimizer), scaler.update() adapts it (section 5).":
        "缩放因子一直没变：在 scaler.step(optimizer) 之后，由 scaler.update() 来调整它（第 5 节）。",
    "the parameters are right but the scale is not: call update() once per step.":
        "参数对了，缩放因子却不对：每一步调用一次 update()。",
    "your step clipped the gradients while they were still multiplied by the scale, so the real step "
    "came out ~1000x too small. What must happen to .grad before a threshold means anything (section 5)?":
        "你在梯度还乘着缩放因子时就做了裁剪，所以真正的更新小了约 1000 倍。"
        "阈值要有意义，.grad 之前必须先经过哪一步（第 5 节）？",
    "on a hidden tiny model your parameters after two steps differ from the recipe's. Check the order: "
    "autocast forward, scale(loss).backward(), unscale_, clip, scaler.step, scaler.update (section 5).":
        "在一个隐藏的小模型上，你的两步训练之后的参数与标准做法的不一样。检查顺序："
        "autocast 前向传播、scale(loss).backward()、unscale_、裁剪、scaler.step、scaler.update（第 5 节）。",
}
