# GSPPCA.R's rankings of the Golub genes along its VEM: gsppca(X, d) with every default
# (nit = 200, epsi = 1e-5, method = "BC", numvar = "Occam"), called as is, with one line added to the
# authors' VEM() (by text, after its convergence test, the loop's last statement): at iterations 1, 2, 4,
# ..., 128 it records the ranking order(u, decreasing = TRUE). Written: one column per checkpoint and one for
# the end (0-based, row r = rank r) and the final u (17 digits); printed: the checkpoints reached, the noise,
# qhat and the largest log evidence, to be compared with the recorded side-by-side run (gsppca.csv:
# d = 1: 595, -96389.39718928357; d = 30: 2803, -98247.9494901813).
# usage: Rscript experiments/peers_recorded/gsppca_golub_rankings.R PEERS_HOME WORKDIR D OUT.csv
#   (PEERS_HOME as made by ../shared/peers/install.sh; WORKDIR holds golub.f64, the 38 x 3051 Golub matrix of
#    data_fetch.load_leukemia_golub() as column-major little-endian float64, and golub.dims "38 3051"), made by
#    python -c "from data_fetch import load_leukemia_golub; X = load_leukemia_golub().X;
#               X.T.astype('<f8').tofile('golub.f64'); open('golub.dims', 'w').write('%d %d' % X.shape)"
args <- commandArgs(trailingOnly = TRUE); ph <- args[1]; wd <- args[2]; d <- as.integer(args[3]); out <- args[4]
.libPaths(c(file.path(ph, "Rlib"), .libPaths())); suppressMessages({library(Bessel); library(RSpectra)})
source(file.path(ph, "GSPPCA", "GSPPCA.R"))
dims <- scan(file.path(wd, "golub.dims"), quiet = TRUE)
X <- matrix(readBin(file.path(wd, "golub.f64"), "double", n = dims[1] * dims[2]), nrow = dims[1])
src <- deparse(VEM)
at <- grep("reldiff = abs((L[j] - L[j - 1])/L[j])", src, fixed = TRUE)  # the body of its last if
stopifnot(length(at) == 1)
src <- append(src, "if (j %in% 2^(0:7)) .ck[[sprintf(\"R_iter_%d\", j)]] <<- order(u, decreasing = TRUE) - 1", at)
.ck <- list()
VEM <- eval(parse(text = src))
t0 <- proc.time()[["elapsed"]]
set.seed(0)
o <- gsppca(X, d = d)
secs <- proc.time()[["elapsed"]] - t0
# the VEM's iterations: the last checkpoint recorded and the end (gsppca does not return the VEM's L)
cols <- .ck
cols[["R_end"]] <- order(o$u, decreasing = TRUE) - 1
cols[["R_u_final"]] <- sprintf("%.17g", o$u)
write.csv(as.data.frame(cols), out, row.names = FALSE, quote = FALSE)
cat(sprintf("d=%d: checkpoints %s, s %.17g, qhat %d, max log evidence %.17g, %.0f s\n", d,
            paste(names(.ck), collapse = " "), o$s, o$qhat, max(o$l), secs))
