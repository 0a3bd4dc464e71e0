"""Chinese for course_utils/exercises/lesson02.py (the glossary's terms)."""
MESSAGES = {
    # 02.read_every
    "return the losses as a list of Python floats; your function returned {kind} (a `return losses` missing?).":
        "请把损失作为 Python 浮点数的列表返回；你的函数返回的是 {kind}（是不是少了 `return losses`？）。",
    "return the losses as a list of Python floats; your function returned {kind}.":
        "请把损失作为 Python 浮点数的列表返回；你的函数返回的是 {kind}。",
    "your list holds loss *tensors*, not numbers. A loss tensor that is still part of the autograd graph "
    "keeps that epoch's whole graph (its activations too) alive for as long as you hold it, and on a GPU "
    "its value has not even been copied back. Read the number with .item() in the epochs you keep, "
    "and only there.":
        "你的列表里存的是损失*张量*，不是数。只要你还拿着一个仍属于自动微分计算图的损失张量，"
        "那个迭代周期的整张计算图（连同它的激活值）就一直占着内存；在 GPU 上，它的值甚至还没有拷回主机。"
        "只在要保留损失的那些迭代周期里用 .item() 读出数值，其他迭代周期不要读。",
    "return the losses as Python floats: {hint}":
        "请把损失作为 Python 浮点数返回：{hint}",
    "each loss":
        "每个损失",
    "your loop ran .item() (or float()) {reads} times for {n} losses read: every call waits "
    "for the device on a GPU. Call it only in the epochs whose loss you keep (section 3).":
        "你的循环调用了 {reads} 次 .item()（或 float()），却只读取了 {n} 个损失：在 GPU 上，每次调用都要等设备算完。"
        "只在要保留损失的那些迭代周期里调用它（第 3 节）。",
    "the model did not end where 60 plain training steps end: every epoch must still run forward, "
    "zero_grad, backward and step; only the *reading* happens every N epochs.":
        "模型的最终状态和普通训练 60 步后的不一样：每个迭代周期仍然都要执行 forward、"
        "zero_grad、backward 和 step；只有*读取*是每 N 个迭代周期做一次。",
    "return the losses of epochs 0, N, 2N, ... as a list of floats ({n} of them in the hidden run).":
        "请把第 0、N、2N、… 个迭代周期的损失作为浮点数列表返回（隐藏的测试运行中共 {n} 个）。",
    "the returned losses are not those of epochs 0, N, 2N, ...: read each one in the epoch it belongs to.":
        "返回的损失不是第 0、N、2N、… 个迭代周期的损失：每个损失都要在它所属的迭代周期里读取。",
    # 02.predict_run
    "a number of seconds":
        "秒数",
    "the parts are in microseconds and the answer is asked in seconds.":
        "各部分的单位是微秒，而题目要的答案单位是秒。",
    "that is one epoch; the run has {epochs:,} of them.":
        "这只是一个迭代周期；整次运行有 {epochs:,} 个迭代周期。",
    "an epoch is, by the model of section 4, the host time of all five parts + the GPU time the host does not "
    "hide + one read: add every measured part, then scale to the whole run.":
        "按第 4 节的模型，一个迭代周期 = 五个部分的主机时间 + 主机没能掩盖的 GPU 时间 + 一次读取："
        "把测得的各部分全部加起来，再换算到整次运行。",
    # 02.overhead_width
    "a width (a number of hidden units)":
        "宽度（隐藏单元的个数）",
    "the overhead is in microseconds: 1 us = 1e-6 s.":
        "开销的单位是微秒：1 us = 1e-6 s。",
    "the rate is in GFLOP/s: 1 GFLOP/s = 1e9 FLOP/s.":
        "速度的单位是 GFLOP/s：1 GFLOP/s = 1e9 FLOP/s。",
    "check the units: us (1e-6 s) and GFLOP/s (1e9 FLOP/s).":
        "检查一下单位：us（1e-6 s）和 GFLOP/s（1e9 FLOP/s）。",
    "a step does {flop:,} FLOP per hidden unit (40,800 at width 10, not per step at every width).":
        "每个隐藏单元让一步多做 {flop:,} FLOP（宽度 10 时共 40,800，并不是每种宽度下每步都是这么多）。",
    "a step does {flop:,} FLOP per hidden unit: 40,800 is the total at width 10.":
        "每个隐藏单元让一步多做 {flop:,} FLOP：40,800 是宽度 10 时的总数。",
    "FLOP the CPU can do in the overhead's time = overhead (s) x rate (FLOP/s); divide by the FLOP one "
    "hidden unit adds to a step.":
        "CPU 在开销那段时间里能做的 FLOP = 开销（s）x 速度（FLOP/s）；再除以一个隐藏单元给一步增加的 FLOP。",
    # 02.momentum_part
    "answer with one of the parts {parts}":
        "请从这几个部分中选一个作答：{parts}",
    "momentum changes how a gradient is *used* once it exists, not how the loss or the gradient is "
    "computed: which part of the step updates the weights from the gradients?":
        "动量改变的是梯度算出来之后*如何使用*，而不是损失或梯度怎么计算：一步中的哪个部分用梯度更新权重？",
    "zero_grad only clears gradients; the momentum buffers are read and written somewhere else.":
        "zero_grad 只清空梯度；动量缓冲区是在别处读写的。",
    # 02.train_right
    "you returned a tensor that still requires grad: store `loss.detach()`, so the stored "
    "losses do not keep every epoch's autograd graph alive.":
        "你返回的张量仍然需要梯度：请存 `loss.detach()`，这样存下的损失就不会让每个迭代周期的自动微分计算图一直占着内存。",
    "return the loss of every epoch (a list of floats, or one tensor); your function returned "
    "{kind} (a `return losses` missing?).":
        "请返回每个迭代周期的损失（一个浮点数列表，或一个张量）；你的函数返回的是 {kind}（是不是少了 `return losses`？）。",
    "return the loss of every epoch (a list of floats, or one tensor); your function returned {kind}.":
        "请返回每个迭代周期的损失（一个浮点数列表，或一个张量）；你的函数返回的是 {kind}。",
    "your list holds loss *tensors*: each one keeps its epoch's autograd graph alive. Keep the losses "
    "in one tensor on the device (`losses[epoch] = loss.detach()`) and read it once at the end.":
        "你的列表里存的是损失*张量*：每一个都让它那个迭代周期的自动微分计算图一直占着内存。"
        "请把损失存进设备上的一个张量（`losses[epoch] = loss.detach()`），最后一次性读取。",
    "your function asked for CUDA when it was given device={device!r} ({error}...). "
    "Use the `device` argument everywhere: never write 'cuda' into the function.":
        "传给你的是 device={device!r}，你的函数却要用 CUDA（{error}...）。"
        "处处使用参数 `device`：永远不要在函数里写死 'cuda'。",
    "after training on device={device!r} the model's parameters are on "
    "{devices}: move the model with `model.to(device)`, the device you were given.":
        "在 device={device!r} 上训练之后，模型的参数却在 {devices} 上："
        "请用 `model.to(device)` 把模型移到传给你的那个设备上。",
    "your function moved tensors {few} times in 10 epochs and {many} times in 30: "
    "something is moved (`.to`) inside the loop. Move the model and the data once, before it.":
        "你的函数在 10 个迭代周期里移动了 {few} 次张量，在 30 个迭代周期里移动了 {many} 次："
        "有东西在循环里被移动（`.to`）。请在循环之前把模型和数据各移动一次。",
    "your function read values back to Python {few} times in 10 epochs and {many} times "
    "in 30: a read per epoch (`.item()`, `float()`, `.tolist()` or `.cpu()` in the loop). On a GPU "
    "each read is a sync. Keep each loss on the device and read them all once, after the loop.":
        "你的函数在 10 个迭代周期里把值读回 Python {few} 次，在 30 个迭代周期里读了 {many} 次："
        "每个迭代周期都读了一次（循环里有 `.item()`、`float()`、`.tolist()` 或 `.cpu()`）。"
        "在 GPU 上，每次读取都是一次同步。把每个损失留在设备上，循环结束后一次性全部读取。",
    "return one loss per epoch: {want} for the 30 epochs of the hidden run, not {got}.":
        "每个迭代周期返回一个损失：隐藏的测试运行有 30 个迭代周期，应返回 {want} 个，而不是 {got} 个。",
    "the loss did not go down: each epoch must run forward, loss, zero_grad, backward and step.":
        "损失没有下降：每个迭代周期都必须执行前向传播、损失、zero_grad、backward 和 step。",
    "the losses differ from the starter's training: keep its optimizer (SGD, lr=0.1), its loss and "
    "full-batch epochs; change only where things live and when they are read.":
        "损失和起始代码的训练结果不一样：保留它的优化器（SGD，lr=0.1）、损失函数和全批量的迭代周期；"
        "只改变数据放在哪里、什么时候读取。",
}
