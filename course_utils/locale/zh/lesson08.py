"""Chinese for course_utils/exercises/lesson08.py (the glossary's terms)."""
MESSAGES = {
    "augment_rng must return a numpy Generator (np.random.default_rng(...)), got {kind}":
        "augment_rng 必须返回一个 numpy Generator（np.random.default_rng(...)），你返回的是 {kind}",
    "pass the function itself, `augment_rng` (got {kind}).":
        "请传入函数本身，即 `augment_rng`（你传的是 {kind}）。",
    "two calls with the same (seed, epoch, index) gave different draws: a worker, or a rerun, would see "
    "other crops. Seed the generator from the three numbers only (the exercise's text).":
        "用相同的 (seed, epoch, index) 调用两次，抽到的随机数却不同：换一个工作进程或重新运行一次，看到的裁剪就会不一样。"
        "请只用这三个数作为生成器的种子（见练习的说明）。",
    "sample 0 gets the same draws in epoch 0 and epoch 1: every epoch would see the same crops and flips.":
        "样本 0 在迭代周期 0 和迭代周期 1 中抽到的随机数相同：每个迭代周期都会看到同样的裁剪和翻转。",
    "{a} and {b} (seed, epoch, index) give the same draws: two different samples or epochs share "
    "their augmentation (adding the numbers up, for one, lets them collide). Give the generator all three.":
        "{a} 和 {b}（seed, epoch, index）抽到的随机数相同：两个不同的样本或迭代周期共用了同一种数据增强"
        "（比如把这几个数加起来，就会发生这种碰撞）。请把三个数都交给生成器。",
    "answer with a whole number of workers (an int), got {kind}":
        "请用工作进程的个数（一个 int）作答，你给的是 {kind}",
    "with no worker the main process prepares every batch itself: the step waits the whole preparation.":
        "没有工作进程时，主进程要自己准备每个小批量：训练步要等完整个准备过程。",
    "with {answer} worker(s), each batch takes {prepare_ms:.0f} ms to prepare, so they hand over "
    "{answer} batch(es) every {prepare_ms:.0f} ms, while the step wants one every {compute_ms:.0f} ms: "
    "the step still waits. Round up, do not round down.":
        "用 {answer} 个工作进程时，每个小批量要准备 {prepare_ms:.0f} ms，所以它们每 {prepare_ms:.0f} ms 交出 "
        "{answer} 个小批量，而训练步每 {compute_ms:.0f} ms 就要一个：训练步仍然要等。请向上取整，不要向下取整。",
    "{answer} workers keep the step busy, but fewer do too: you need the batches to arrive at least as fast "
    "as the step uses them, and not more workers than that.":
        "{answer} 个工作进程能让训练步一直忙碌，但更少的工作进程也可以：你需要小批量送来的速度至少跟得上训练步消耗的速度，"
        "工作进程不必比这更多。",
    "answer with a set of start methods taken from {methods}":
        "请用一个集合作答，其中的启动方式取自 {methods}",
    "a spawned worker is a fresh Python process: it unpickles the dataset by importing `module.ClassName`. "
    "In which module does a class defined in a notebook live, and does the fresh process have it (the exercise's text, and deeper §1)?":
        "spawn 启动的工作进程是一个全新的 Python 进程：它通过导入 `module.ClassName` 来反序列化（unpickle）数据集。"
        "在 notebook 中定义的类位于哪个模块？这个全新的进程里有这个模块吗？（见练习的说明，以及深入篇第 1 节。）",
    "a forkserver worker is forked from the clean server process, not from your notebook: the server only "
    "imported what was preloaded (here torch and course_utils.datasets). Does it know your class?":
        "forkserver 的工作进程是从干净的服务器进程 fork 出来的，而不是从你的 notebook：服务器只导入了预加载的内容"
        "（这里是 torch 和 course_utils.datasets）。它知道你的类吗？",
    "one start method copies the whole parent process, notebook namespace included: which one (the exercise's text, and deeper §1)?":
        "有一种启动方式会复制整个父进程，连同 notebook 的命名空间：是哪一种？（见练习的说明，以及深入篇第 1 节。）",
}
