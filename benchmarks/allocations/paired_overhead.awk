# Paired overhead of one configuration against bare, from interleaved rounds (compare.sh).
# Input: one line per round, "BARE CONFIG" (seconds of the same round). Prints
# "MEDIAN LOW HIGH": the median of the per-round overheads in percent and a distribution-free
# 95 % confidence interval of that median (order statistics of the binomial(n, 1/2): no
# assumption about the machine's noise). With fewer than 6 rounds there is no such interval;
# the lowest and highest overhead are printed instead.
{ overhead[NR] = ($2 / $1 - 1) * 100 }
END {
  n = NR
  if (n == 0) { print "nan nan nan"; exit }
  # insertion sort: n is a few dozen
  for (i = 2; i <= n; i++) {
    v = overhead[i]
    for (j = i - 1; j >= 1 && overhead[j] > v; j--) overhead[j + 1] = overhead[j]
    overhead[j + 1] = v
  }
  median = n % 2 ? overhead[(n + 1) / 2] : (overhead[n / 2] + overhead[n / 2 + 1]) / 2
  # k: the largest rank with P(Binomial(n, 1/2) <= k - 1) <= 0.025; the interval is
  # [x(k), x(n + 1 - k)].
  k = 0; cumulative = 0; term = 0.5 ^ n
  for (r = 0; r < n; r++) {
    cumulative += term
    if (cumulative > 0.025) break
    k = r + 1
    term = term * (n - r) / (r + 1)
  }
  if (k < 1) { low = overhead[1]; high = overhead[n] }
  else { low = overhead[k]; high = overhead[n + 1 - k] }
  printf "%.1f %.1f %.1f\n", median, low, high
}
