// The Block scales tab: its per-block scales come from the engine's one scale rule, so the clipped values it
// counts block by block add up to the engine's own count for every rule (MX floor/ceil/even/rceil, NVFP4
// amax/6 and MSE search); FLOOR's scales are mx_scale's; CEIL and RCEIL never clip; the sweep's SQNRs are
// compute_error_view's at each block size; the inspector shows a block's values; Cancel leaves the last result.
#include <QTableWidget>
#include <QtTest>

#include <atomic>
#include <cmath>

#include "blockscalespanel.h"
#include "quant/error_view.h"
#include "quant/scheme.h"
#include "quant/synthetic.h"

class TestBlockScalesPanel : public QObject {
  Q_OBJECT

private slots:
  void perBlockCountsMatchTheEngine_data();
  void perBlockCountsMatchTheEngine();
  void sweepAndInspector();
  void cancelKeepsTheLastResult();
};

namespace {

TensorData laplace(std::size_t rows, std::size_t cols, uint64_t seed) {
  qs::SyntheticSpec spec;
  spec.dist = qs::Distribution::Laplace;
  spec.n = rows * cols;
  spec.cols = cols;
  spec.seed = seed;
  TensorData t;
  t.source = QStringLiteral("synthetic");
  t.name = QStringLiteral("laplace");
  t.values = std::make_shared<std::vector<float>>(qs::make_synthetic(spec, 1));
  t.shape = {int64_t(rows), int64_t(cols)};
  return t;
}

}  // namespace

void TestBlockScalesPanel::perBlockCountsMatchTheEngine_data() {
  QTest::addColumn<int>("family");
  QTest::addColumn<QString>("element");
  QTest::addColumn<int>("block");
  QTest::newRow("mx e2m1fn 32") << int(BlockScalesPanel::Family::Mx) << "e2m1fn" << 32;
  QTest::newRow("mx e4m3fn 16") << int(BlockScalesPanel::Family::Mx) << "e4m3fn" << 16;
  QTest::newRow("mx int8 64") << int(BlockScalesPanel::Family::Mx) << "int8" << 64;
  QTest::newRow("nvfp4 16") << int(BlockScalesPanel::Family::Nvfp4) << "e2m1fn" << 16;
}

void TestBlockScalesPanel::perBlockCountsMatchTheEngine() {
  QFETCH(int, family);
  QFETCH(QString, element);
  QFETCH(int, block);
  const TensorData t = laplace(64, 200, 5);  // 200 = 6 blocks of 32 + a partial one: partial blocks count too
  std::atomic<bool> cancelled{false};
  const BlockScalesPanel::Result r = BlockScalesPanel::run(t, BlockScalesPanel::Family(family), element, block, cancelled);
  QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
  QCOMPARE(r.blocksPerRow, std::size_t((200 + block - 1) / block));
  QCOMPARE(r.rules.size(), family == int(BlockScalesPanel::Family::Mx) ? std::size_t(4) : std::size_t(2));
  for (const BlockScalesPanel::Rule& rule : r.rules) {
    uint64_t clipped = 0, flushed = 0;
    for (uint32_t c : rule.clipped) clipped += c;
    for (uint32_t f : rule.flushed) flushed += f;
    QCOMPARE(clipped, rule.view.clipped);                 // the engine's count, block by block
    QCOMPARE(flushed, rule.view.out.stats.underflow);     // non-zero values that became zero
    // The engine on its own agrees with the view kept here.
    const qs::ErrorView v = qs::compute_error_view(rule.scheme, t.values->data(), t.shape);
    QCOMPARE(v.metrics.sqnr_db(), rule.view.metrics.sqnr_db());
    if (rule.name == u"floor") {
      const qs::Format f = rule.scheme.format;
      for (std::size_t b = 0; b < rule.scale.size(); ++b) {
        const std::size_t row = b / r.blocksPerRow, j = b % r.blocksPerRow;
        const std::size_t off = row * 200 + j * std::size_t(block), len = std::min<std::size_t>(std::size_t(block), 200 - j * std::size_t(block));
        double amax = 0;
        for (std::size_t k = 0; k < len; ++k) amax = std::max(amax, double(std::abs((*t.values)[off + k])));
        QCOMPARE(rule.scale[b], qs::mx_scale(f, amax));
      }
    }
    if (rule.name == u"mse") {  // the batched search (whole blocks of a row) and the short last block alone
      double tensorAmax = 0;
      for (float v : *t.values) tensorAmax = std::max(tensorAmax, double(std::abs(v)));
      const float ts = qs::two_level_tensor_scale(qs::scale_rule_params(rule.scheme), tensorAmax);
      const std::vector<double> cands = qs::search_candidates(rule.scheme);
      for (std::size_t b = 0; b < rule.scale.size(); ++b) {
        const std::size_t row = b / r.blocksPerRow, j = b % r.blocksPerRow;
        const std::size_t off = row * 200 + j * std::size_t(block), len = std::min<std::size_t>(std::size_t(block), 200 - j * std::size_t(block));
        QCOMPARE(rule.scale[b], qs::search_block_scale_exhaustive(rule.scheme, cands, t.values->data() + off, len, ts));
      }
    }
    if (rule.name == u"ceil" || rule.name == u"rceil") QCOMPARE(clipped, uint64_t(0));
  }
}

void TestBlockScalesPanel::sweepAndInspector() {
  BlockScalesPanel panel;
  const TensorData t = laplace(32, 128, 9);
  panel.setTensor(t);
  QVERIFY(panel.setFamily(BlockScalesPanel::Family::Mx, QStringLiteral("e2m1fn"), 32));
  QVERIFY(panel.waitForIdle(60000));
  const BlockScalesPanel::Result* r = panel.result();
  QVERIFY(r);
  QCOMPARE(panel.table()->rowCount(), 4);
  QCOMPARE(r->sweepBlocks, (std::vector<int>{16, 32, 64, 128}));
  for (std::size_t i = 0; i < r->rules.size(); ++i)
    for (std::size_t k = 0; k < r->sweepBlocks.size(); ++k) {
      const QString text = BlockScalesPanel::ruleSchemes(BlockScalesPanel::Family::Mx, QStringLiteral("e2m1fn"), r->sweepBlocks[k])[i].second;
      const qs::ErrorView v = qs::compute_error_view(qs::parse_scheme(text.toStdString()), t.values->data(), t.shape);
      QCOMPARE(r->sweepSqnr[i][k], v.metrics.sqnr_db());
    }
  // The inspector: block 1 of row 1 holds x[128 + 32 .. + 32) and each rule's q there.
  panel.selectBlock(1 * 4 + 1);
  QTableWidget* ins = panel.inspector();
  QCOMPARE(ins->rowCount(), 32);
  QCOMPARE(ins->columnCount(), 5);
  for (int k = 0; k < 32; ++k) {
    QCOMPARE(ins->item(k, 0)->text().replace(QChar(0x2212), u'-').toFloat(), (*t.values)[160 + std::size_t(k)]);  // exact
    QCOMPARE(ins->item(k, 1)->text().replace(QChar(0x2212), u'-').toFloat(), r->rules[0].q[160 + std::size_t(k)]);
  }
  QCOMPARE(panel.csv().trimmed().split('\n').size(), 5);
  QVERIFY(panel.statusText().contains(QStringLiteral("Best")));
}

void TestBlockScalesPanel::cancelKeepsTheLastResult() {
  BlockScalesPanel panel;
  panel.setTensor(laplace(16, 64, 3));
  QVERIFY(panel.setFamily(BlockScalesPanel::Family::Mx, QStringLiteral("e2m1fn"), 32));
  QVERIFY(panel.waitForIdle(60000));
  const double before = panel.result()->rules[0].view.metrics.sqnr_db();
  panel.setTensor(laplace(4096, 4096, 4));  // 16 M values: long enough to cancel
  panel.compute();
  QVERIFY(panel.isBusy());
  panel.cancel();
  QVERIFY(panel.waitForIdle(60000));
  QVERIFY2(panel.statusText().startsWith(QStringLiteral("Cancelled")), qPrintable(panel.statusText()));
  QCOMPARE(panel.result()->rules[0].view.metrics.sqnr_db(), before);
}

QTEST_MAIN(TestBlockScalesPanel)
#include "tst_blockscalespanel.moc"
