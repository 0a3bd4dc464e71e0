"""Chinese for course_utils/exercises/lesson11.py (the glossary's terms)."""
MESSAGES = {
    "your function raised {name}: {exc} for stage {stage}, world {world}":
        "你的函数在阶段 {stage}、{world} 个进程时抛出了 {name}：{exc}",
    "that is lesson 05's ZeRO-2 column, which describes the peak; between steps FSDP2 has resharded "
    "every unit after its backward, so what does a ZeRO-2 rank hold of the weights then?":
        "这是第 05 课的 ZeRO-2 那一列，它描述的是峰值；在两步之间，FSDP2 已经在每个单元的反向传播之后重新分片，"
        "那么这时一个 ZeRO-2 进程还持有多少权重？",
    "ZeRO-1 shards only the optimizer state (8 of Adam's 16 bytes per parameter); weights and gradients stay whole.":
        "ZeRO-1 只对优化器状态分片（Adam 每个参数 16 字节中的 8 字节）；权重和梯度保持完整。",
    "for stage {stage} on {world} rank(s) this run measured {got:,.0f} bytes per rank and your function says "
    "{value:,.0f}: count 4 bytes of weights, 4 of gradients and 8 of Adam's state per parameter, and divide "
    "by the world size only what that stage shards.":
        "在阶段 {stage}、{world} 个进程时，本次运行测得每个进程 {got:,.0f} 字节，而你的函数给出 "
        "{value:,.0f}：每个参数算 4 字节权重、4 字节梯度和 8 字节 Adam 状态，"
        "只把该阶段分片的部分除以进程总数。",
    "that is the ratio of the tensors' sizes; on a ring an all-reduce sends 2(N-1)/N of its tensor per "
    "rank, an all-gather or a reduce-scatter (N-1)/N: weigh each kind before dividing.":
        "这是张量大小之比；在环上，全规约（all-reduce）每个进程发送其张量的 2(N-1)/N，"
        "全收集（all-gather）或规约散射（reduce-scatter）发送 (N-1)/N：先按各自的比例折算，再相除。",
    "that is what gloo ran (its reduce-scatter is an all-reduce); the question asks for a real reduce-scatter.":
        "这是 gloo 实际运行的方式（它的规约散射其实是一次全规约）；题目问的是真正的规约散射（reduce-scatter）。",
    "add the all-gathers' and the reduce-scatter's wire bytes, (N-1)/N of each tensor, and divide by DDP's all-reduce's.":
        "把各次全收集和规约散射在线上传输的字节数（各为其张量的 (N-1)/N）相加，再除以 DDP 全规约的线上传输字节数。",
    "answer with a whole number of ranks (an int).":
        "请用整数个进程作答（一个 int）。",
    "with that many ranks each one still holds a little more than the card: round up, not down.":
        "用这么多进程，每个进程要持有的仍比一张卡能装的多一点：要向上取整，而不是向下。",
    "too few: ZeRO-3 divides all 16 bytes per parameter by N; find the N that brings 16 x parameters / N under the card.":
        "太少了：ZeRO-3 把每个参数的全部 16 字节除以 N；找出让 16 x 参数量 / N 装进一张卡的 N。",
    "more than needed: a smaller world size already brings 16 x parameters / N under the card.":
        "比需要的多：更小的进程总数就已经能让 16 x 参数量 / N 装进一张卡。",
}
