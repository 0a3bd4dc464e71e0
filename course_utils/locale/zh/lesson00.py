"""Chinese for course_utils/exercises/lesson00.py (the glossary's terms)."""
MESSAGES = {
    "Tensor Cores": "张量核心",
    "bf16 Tensor Cores": "bf16 张量核心",
    "kernels in the CUDA 13 wheels": "CUDA 13 wheel 里的内核",
    "return a tuple of three booleans, e.g. (True, False, True); for {cc} you returned {got!r}":
        "请返回由三个布尔值组成的元组，例如 (True, False, True)；对 {cc}，你返回的是 {got!r}",
    "for compute capability {major}.{minor} your function says {name}: {says}. "
    "Reread section 2 (compute capability) and section 3: which "
    "architecture introduced that feature, and which is the oldest the CUDA 13 wheels support?":
        "计算能力为 {major}.{minor} 时，你的函数对“{name}”给出的是 {says}。重读第 2 节（计算能力）和第 3 节："
        "这个特性是哪一代架构引入的？CUDA 13 的 wheel 支持的最老架构又是哪一代？",
    "no NVIDIA driver": "没有 NVIDIA 驱动",
    "driver R{driver}": "驱动版本为 R{driver}",
    "a machine with {who} and a GPU of compute capability {major}.{minor}: you picked {got!r}. "
    "A wheel needs both a driver new enough for its CUDA runtime and kernels for the GPU's "
    "architecture: reread section 3 (driver minimums, and which build dropped which GPUs). "
    "When no GPU build fits, the answer is 'cpu' (or a newer driver).":
        "一台{who}、GPU 计算能力为 {major}.{minor} 的机器：你选了 {got!r}。一个 wheel 既需要足够新、"
        "能支持它的 CUDA 运行时的驱动，也需要为这块 GPU 的架构编译的内核：重读第 3 节（驱动的最低版本，"
        "以及哪个构建放弃了哪些 GPU）。没有合适的 GPU 构建时，答案就是 'cpu'（或者升级驱动）。",
    "no CUDA toolkit is installed on the system": "系统上没有安装 CUDA 工具包",
    "the NVIDIA driver is older than the R580 series": "NVIDIA 驱动比 R580 系列旧",
    "PyTorch was installed without a GPU, so it is a +cpu build": "PyTorch 是在没有 GPU 时安装的，所以它是 +cpu 构建",
    "a CUDA build of PyTorch brings its own CUDA runtime (on Linux as `nvidia-*` pip packages installed "
    "with it), so a system-wide toolkit is not needed to run it (section 1, `cuda_build`). What on the "
    "system must match that runtime?":
        "CUDA 版的 PyTorch 自带 CUDA 运行时（在 Linux 上是随它一起安装的 `nvidia-*` pip 包），"
        "所以运行它不需要在系统里装工具包（第 1 节，`cuda_build`）。那么系统上的什么必须与这个运行时匹配？",
    "a +cpu build reports torch.version.cuda as None, but this one says '13.0': it *is* a CUDA build. "
    "What else must the system provide for it?":
        "+cpu 构建的 torch.version.cuda 是 None，而这里是 '13.0'：它*就是* CUDA 构建。系统还必须为它提供什么？",
    "answer with one letter, one of {letters}": "请用一个字母作答，取 {letters} 之一",
    "choose_device should be a function (def choose_device(): ...), not a {kind}":
        "choose_device 应该是一个函数（def choose_device(): ...），而不是 {kind}",
    "a pretend machine where cuda {cuda_is} and mps {mps_is}": "一台 cuda {cuda_is}、mps {mps_is}的假想机器",
    "is available": "可用",
    "is not available": "不可用",
    "on {machine} you returned the string {got!r}: return a torch.device, e.g. torch.device({got!r})":
        "在{machine}上，你返回了字符串 {got!r}：请返回 torch.device，例如 torch.device({got!r})",
    "on {machine} you returned {got!r}: return a torch.device": "在{machine}上，你返回了 {got!r}：请返回 torch.device",
    "on {machine} you picked {picked!r}. Ask torch.cuda.is_available() first, then "
    "torch.backends.mps.is_available(), and fall back to the CPU; ask inside the function, "
    "so the answer follows the machine it runs on.":
        "在{machine}上，你选了 {picked!r}。先问 torch.cuda.is_available()，再问 torch.backends.mps.is_available()，"
        "都不行就退回 CPU；而且要在函数内部问，这样答案才会跟着运行它的机器走。",
    "the NVIDIA driver is too old": "NVIDIA 驱动太旧",
    "this PyTorch build has no kernels for that GPU's generation": "这个 PyTorch 构建没有那一代 GPU 的内核",
    "with a driver too old for the build's CUDA runtime, torch.cuda.is_available() says False "
    "(Exercise 3). Here the flag said True: the driver works. What did the flag not check?":
        "如果驱动太旧，不支持这个构建的 CUDA 运行时，torch.cuda.is_available() 会返回 False（练习 3）。"
        "这里标志说的是 True：驱动没问题。那么标志没有检查什么？",
    "PyTorch brings its own CUDA runtime (section 1): running it needs no toolkit. The error names "
    "a missing 'kernel image': whose kernels are they, and for which GPUs were they built?":
        "PyTorch 自带 CUDA 运行时（第 1 节）：运行它不需要工具包。报错说缺少 'kernel image'（内核映像）："
        "这些是谁的内核？它们是为哪些 GPU 编译的？",
}
