"""Chinese for course_utils/exercises/lesson04.py (the glossary's terms)."""
MESSAGES = {
    "for n={n} in {seconds} s, what your function returns": "n={n}、用时 {seconds} s 时，你的函数的返回值",
    "for n={n} in {seconds} s you return half the rate: each of the n³ multiply-adds is two "
    "floating-point operations (§3).":
        "n={n}、用时 {seconds} s 时，你返回的速率只有正确值的一半：n³ 次乘加中的每一次都是两次浮点运算（第 3 节）。",
    "your figure is 1000x too large: that is GFLOP/s. A TFLOP is 10¹² operations.":
        "你的数大了 1000 倍：那是 GFLOP/s。1 TFLOP 是 10¹² 次浮点运算。",
    "for n={n} in {seconds} s you return {got!r}. Count the FLOP of an n×n @ n×n product "
    "(§3), divide by the seconds, and express the rate in units of 10¹² per second.":
        "n={n}、用时 {seconds} s 时，你返回的是 {got!r}。先数出一次 n×n @ n×n 乘积的 FLOP（第 3 节），"
        "除以秒数，再以每秒 10¹² 次为单位表示这个速率。",
    "what your function returns": "你的函数的返回值",
    "you added the two times. The roofline assumes the chip moves bytes while it computes, so "
    "an operation takes as long as the slower of the two, not their sum (§5).":
        "你把两个时间加起来了。屋顶线模型假设芯片在计算的同时搬运字节，所以一个操作的用时等于两者中较慢的那个，"
        "而不是两者之和（第 5 节）。",
    "you took the faster of the two limits; the operation is held back by the slower one (§5).":
        "你取了两个限制中较快的那个；拖慢操作的是较慢的那个（第 5 节）。",
    "for {flop:.3g} FLOP and {nbytes:.3g} bytes on a chip with {peak:.3g} FLOP/s and {bw:.3g} bytes/s "
    "you return {got!r} s. How long does the arithmetic alone take, and the memory traffic alone?":
        "对于 {flop:.3g} FLOP、{nbytes:.3g} 字节，在峰值 {peak:.3g} FLOP/s、带宽每秒 {bw:.3g} 字节的芯片上，"
        "你返回的是 {got!r} s。只算运算要多久？只算内存读写又要多久？",
    'your answer is {answer!r}; answer with a string, "memory" or "compute", computed from the ridge '
    '(best["fp32"] / bandwidth) and the matmul\'s arithmetic intensity.':
        '你的答案是 {answer!r}；请用字符串 "memory" 或 "compute" 作答，由脊点（best["fp32"] / bandwidth）'
        '和这个矩阵乘法的算术强度算出。',
    'answer "memory" or "compute"': '请回答 "memory" 或 "compute"',
    "on this run's roofline the ridge is at {ridge:.1f} FLOP/byte. Work out the "
    "matmul's arithmetic intensity for n={n} in fp32 (§5: FLOP over the bytes of three "
    "n×n matrices) and see on which side of the ridge it falls.":
        "在本次运行的屋顶线上，脊点位于 {ridge:.1f} FLOP/byte。算出 n={n} 时 fp32 矩阵乘法的算术强度"
        "（第 5 节：FLOP 除以三个 n×n 矩阵的字节数），看它落在脊点的哪一侧。",
    "that divides by the 1,979 TFLOP/s headline, which holds only for 2:4-sparse matrices. "
    "Which figure applies to an ordinary dense matmul (the deeper notebook's §2)?":
        "你除以的是宣传用的 1,979 TFLOP/s，这个数只适用于 2:4 稀疏矩阵。普通的稠密矩阵乘法该用哪个数"
        "（深入篇第 2 节）？",
    "that is a fraction; give the percentage (0.5 -> 50).": "这是一个小数比例；请给出百分数（0.5 -> 50）。",
    "{answer!r} is not 700 TFLOP/s as a percentage of the H100 SXM's dense BF16 peak in the deeper "
    "notebook's §2 table.":
        "{answer!r} 不是 700 TFLOP/s 占 H100 SXM 稠密 BF16 峰值（深入篇第 2 节的表格）的百分比。",
}
