# GSPPCA.R at Mattei et al. (2016) Fig. 2's setting (Sec. 3.2): model (3), d = 10, q = 20, two scenarios,
# sigma in {0.05, 0.2, 0.4, 0.6, 0.8, 1}; gsppca()'s own defaults (nit = 200, epsi = 1e-5, BC noise, Occam),
# and, where that VEM stopped at its 200-iteration cap, the same data again with the cap raised to nit = 5000
# (does the cap change the selection?). Runs FIRST..RUNS of each level (seeded per scenario, sigma, run).
# usage: Rscript experiments/peers_recorded/gsppca_fig2.R PEERS_HOME RUNS OUT.csv [SIGMAS] [SCENARIOS] [FIRST]
#   (PEERS_HOME as made by ../shared/peers/install.sh: Rlib with Bessel and RSpectra, GSPPCA/GSPPCA.R;
#    SIGMAS and SCENARIOS comma-separated, default all; one row is appended to OUT.csv per run)
args <- commandArgs(trailingOnly = TRUE); ph <- args[1]; runs <- as.integer(args[2]); out <- args[3]
sig_arg <- if (length(args) >= 4) as.numeric(strsplit(args[4], ",")[[1]]) else c(0.05, 0.2, 0.4, 0.6, 0.8, 1)
scen_arg <- if (length(args) >= 5) as.integer(strsplit(args[5], ",")[[1]]) else c(1, 2)
first <- if (length(args) >= 6) as.integer(args[6]) else 1
.libPaths(c(file.path(ph, "Rlib"), .libPaths())); suppressMessages({library(Bessel); library(RSpectra)})
source(file.path(ph, "GSPPCA", "GSPPCA.R"))
d <- 10; q <- 20
scen <- list(c(50, 150), c(100, 100))
fsc <- function(sel, v) { tp <- sum(sel & v); if (tp == 0) return(0); 2 * tp / (sum(sel) + sum(v)) }
fit <- function(x, nit) {   # gsppca(x, d) with its defaults, returning the VEM's iteration count too
  xc <- scale(x, scale = FALSE); dvs <- svd(xc, nu = d, nv = d)
  shat <- sdPPCA(xc, d, method = "BC", svdobject = dvs); ml <- MLPPCA(xc, d, method = "BC", svdobject = dvs)
  o <- VEM(x = xc, d = d, nit = nit, alpha = sqrt(d / (sd(xc)^2)), s = shat, mu = ml$Y, M = ml$W, epsi = 1e-5)
  r <- Occam(x = x, u = o$u, d = d, svdobject = dvs)
  sel <- rep(FALSE, ncol(x)); sel[order(o$u, decreasing = TRUE)[1:r$qhat]] <- TRUE
  list(sel = sel, it = length(o$L), reldiff = o$reldiff)
}
for (si in scen_arg) for (sigma in sig_arg) for (r in first:runs) {
  n <- scen[[si]][1]; p <- scen[[si]][2]
  set.seed(1000 * si + 100 * round(20 * sigma) + r)
  W <- matrix(rnorm(p * d), p); v <- rep(FALSE, p); v[sample.int(p, q)] <- TRUE
  X <- matrix(rnorm(n * d), n) %*% t(W * v) + sigma * matrix(rnorm(n * p), n)
  t0 <- proc.time()[["elapsed"]]
  a <- fit(X, 200)
  capped <- a$it >= 200 && a$reldiff >= 1e-5
  b <- if (capped) fit(X, 5000) else a
  row <- data.frame(n = n, p = p, q = q, sigma = sigma, run = r,
    fscore = fsc(a$sel, v), n_selected = sum(a$sel), vem_iter = a$it, capped = capped,
    fscore_nit5000 = fsc(b$sel, v), n_selected_nit5000 = sum(b$sel), vem_iter_nit5000 = b$it,
    seconds = proc.time()[["elapsed"]] - t0)
  write.table(row, out, sep = ",", row.names = FALSE, col.names = !file.exists(out), append = file.exists(out))
  cat(sprintf("n=%d p=%d sigma=%.2f run %d: F %.3f (%d it) / nit 5000: F %.3f (%d it)\n", n, p, sigma, r,
      fsc(a$sel, v), a$it, fsc(b$sel, v), b$it))
}
