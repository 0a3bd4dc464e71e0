"""Chinese for course_utils/exercises/lesson03.py (the glossary's terms)."""
MESSAGES = {
    # 03.ema
    "EMA should be a class (class EMA: with __init__ and __call__), not a {kind}: "
    "an instance made by EMA(beta) keeps the average between calls (section 1).":
        "EMA 应该是一个类（class EMA:，带 __init__ 和 __call__），而不是 {kind}："
        "由 EMA(beta) 创建的实例会在两次调用之间保存平均值（第 1 节）。",
    "your EMA defines no __call__ yet, so ema(value) cannot work: write __init__(self, beta) to set "
    "up the state and __call__(self, value) to update and return it (RunningMean in section 1).":
        "你的 EMA 还没有定义 __call__，所以 ema(value) 无法调用：写 __init__(self, beta) 来建立状态，"
        "写 __call__(self, value) 来更新并返回它（参考第 1 节的 RunningMean）。",
    "with beta={beta}, what ema({v}) returns":
        "beta={beta} 时 ema({v}) 的返回值",
    "with beta={beta}, after {n} values your average is {got!r}, not what "
    "mean = beta * mean + (1 - beta) * value gives. Does the first call return the value "
    "itself, is the state kept on self between calls, and does beta weigh the old mean?":
        "beta={beta} 时，输入 {n} 个值之后你的平均值是 {got!r}，"
        "不是 mean = beta * mean + (1 - beta) * value 算出的结果。第一次调用是否返回了值本身？"
        "状态是否在两次调用之间保存在 self 上？beta 乘的是不是旧的平均值？",
    # 03.record_shapes
    "on a model you have not seen, you returned {got!r}. Expected one (name, output shape) pair "
    "per submodule with a name (named_modules() gives the model itself the name ''), in the order "
    "the hooks fire, with the shape as a tuple of ints (section 3).":
        "在一个你没见过的模型上，你返回的是 {got!r}。应当为每个有名字的子模块返回一个 (名字, 输出形状) 对"
        "（named_modules() 给模型本身的名字是 ''），按钩子触发的顺序排列，形状是由 int 组成的元组（第 3 节）。",
    "your function returned the right shapes but left {left} hooks on the model: they would fire "
    "on every later call. Keep the handles and remove them (section 4), even if the call raises.":
        "你的函数返回的形状是对的，但在模型上留下了 {left} 个钩子：以后每次调用它们都会触发。"
        "请保存句柄并移除钩子（第 4 节），即使调用抛出异常也要移除。",
    # 03.pruned_call
    'your answer is {answer!r}; answer with the call as a string: "fc1(X)" or "fc1.forward(X)"':
        '你的答案是 {answer!r}；请用字符串写出那个调用："fc1(X)" 或 "fc1.forward(X)"',
    "forward multiplies X by the attribute `weight` as it is. When was that attribute last computed "
    "from weight_orig and weight_mask, and by what (the end of section 2)?":
        "forward 直接用属性 `weight` 的当前值去乘 X。这个属性上一次由 weight_orig 和 weight_mask "
        "计算出来是在什么时候？又是由谁算的（见第 2 节末尾）？",
    'answer with the call as a string: "fc1(X)" or "fc1.forward(X)"':
        '请用字符串写出那个调用："fc1(X)" 或 "fc1.forward(X)"',
    # 03.count_module_calls
    "two calls of model[0]":
        "两次调用 model[0]",
    "for {what} your function returns a {kind}; return the number of calls "
    "(an int, e.g. len() of what your hook collected).":
        "对于 {what}，你的函数返回的是 {kind}；请返回调用的次数（一个 int，例如对钩子收集到的内容取 len()）。",
    "for {what} on a model you have not seen you counted {got!r} module calls. A global forward "
    "hook fires once for every module called through __call__, the outer model included.":
        "对于 {what}，在一个你没见过的模型上，你数出了 {got!r} 次模块调用。"
        "全局前向钩子对每个通过 __call__ 调用的模块触发一次，最外层的模型也算在内。",
    "the counts are right, but {n} global hooks were still registered afterwards: they would "
    "count (and slow) every module call in this kernel from now on. Remove them with their handles.":
        "计数是对的，但结束后仍有 {n} 个全局钩子处于注册状态：从现在起，它们会统计（并拖慢）"
        "这个 Jupyter 内核里的每一次模块调用。请用句柄把钩子移除。",
}
