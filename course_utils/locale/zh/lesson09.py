"""Chinese for course_utils/exercises/lesson09.py (the glossary's terms)."""
MESSAGES = {
    "answer with a Python number, not a tensor: `.item()` turns a one-element tensor into one.":
        "请用 Python 数字作答，而不是张量：`.item()` 可以把只有一个元素的张量变成 Python 数字。",
    "answer with a Python number (got {kind}).": "请用 Python 数字作答（你给的是 {kind}）。",
    "the micro-batches count too: one optimizer step averages the gradient over GPUs x batch per GPU "
    "x micro-batches samples (the global batch of the section on the learning rate).":
        "微批量也要算进去：一次优化器更新是对 GPU 数 x 每个 GPU 的小批量大小 x 微批量数 个样本的梯度求平均"
        "（即讲学习率那一节里的全局批量）。",
    "the reference learning rate was tuned for a global batch of {base_batch}, not for one GPU: "
    "scale by new global batch / old global batch.":
        "参考学习率是针对 {base_batch} 的全局批量调好的，而不是针对单个 GPU：请按 新全局批量 / 旧全局批量 来缩放。",
    "the linear rule multiplies the learning rate by the factor the global batch grew: work out the "
    "old and the new global batch (samples per optimizer step) first.":
        "线性规则把学习率乘以全局批量增大的倍数：先算出旧的和新的全局批量（每次优化器更新的样本数）。",
    "pass the function itself, `accumulate` (got {kind}).": "请传入函数本身，即 `accumulate`（你传的是 {kind}）。",
    "the gradients differ from one backward of the whole batch's mean loss: did you divide each "
    "micro-batch's loss by the number of micro-batches, and call backward for every one of them?":
        "梯度与对整个小批量的平均损失做一次反向传播得到的不同：你是否把每个微批量的损失都除以了微批量数，"
        "并对每个微批量都调用了 backward？",
    "DDP never all-reduced: the last micro-batch must run outside no_sync(), or the ranks keep "
    "their own gradients and drift apart.":
        "DDP 一次全规约都没有做：最后一个微批量必须在 no_sync() 之外运行，否则各进程只保留自己的梯度，参数会越走越远。",
    "DDP all-reduced {rounds} times for one optimizer step: every micro-batch but the last must "
    "run inside `with ddp.no_sync():`, forward included (DDP prepares the all-reduce in forward).":
        "一次优化器更新中 DDP 做了 {rounds} 次全规约：除最后一个以外，每个微批量都必须在 `with ddp.no_sync():` "
        "里面运行，前向传播也包括在内（DDP 在前向传播中就为全规约做准备）。",
    "the gradients are right; return the mean loss of the whole batch (the sum of the divided losses).":
        "梯度是对的；请返回整个小批量的平均损失（即各个除过之后的损失之和）。",
    "halving the share assumes the whole step doubles; only the computation doubles, the exposed "
    "all-reduce time stays: write the new step time as computation + communication first.":
        "把占比减半，等于假设整个训练步的时间翻倍；其实只有计算翻倍，暴露在外的全规约时间不变："
        "先把新的每步时间写成 计算 + 通信。",
    "that is this run's share; the question asks for a step whose computation takes twice as long.":
        "这是本次运行的占比；题目问的是计算时间变成两倍时的一步。",
    "the communication this run added per step is step time minus the time without all-reduce "
    "(bench_many['step_s'] and ['compute_s']); double only the computation, then divide.":
        "本次运行每一步增加的通信时间，是每步时间减去不做全规约时的时间（bench_many['step_s'] 和 ['compute_s']）；"
        "只把计算时间翻倍，然后再相除。",
}
