#include <iostream>
#include <stdexcept>
#include <vector>

namespace linalg {

// A dense row-major matrix.
template <typename T>
class Matrix {
public:
    Matrix(std::size_t rows, std::size_t cols) : rows_(rows), cols_(cols), data_(rows * cols) {}

    T &operator()(std::size_t r, std::size_t c) { return data_.at(r * cols_ + c); }
    const T &operator()(std::size_t r, std::size_t c) const { return data_.at(r * cols_ + c); }

    Matrix operator*(const Matrix &other) const {
        if (cols_ != other.rows_) {
            throw std::invalid_argument("shape mismatch");
        }
        Matrix out(rows_, other.cols_);
        for (std::size_t i = 0; i < rows_; ++i) {
            for (std::size_t k = 0; k < cols_; ++k) {
                for (std::size_t j = 0; j < other.cols_; ++j) {
                    out(i, j) += (*this)(i, k) * other(k, j);
                }
            }
        }
        return out;
    }

private:
    std::size_t rows_, cols_;
    std::vector<T> data_;
};

}  // namespace linalg

int main() {
    linalg::Matrix<double> a(2, 2);
    a(0, 0) = 1; a(1, 1) = 2;
    auto b = a * a;
    std::cout << b(1, 1) << std::endl;  // 4
    return 0;
}
